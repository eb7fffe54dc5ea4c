// Human baseline: click points on each Point-Bench item; the server scores them with the model rules.
"use strict";
const st = { items: [], i: 0, points: [], img: null, done: 0, hits: 0 };
const canvas = document.getElementById("human-canvas");

function render() {
  const ctx = canvas.getContext("2d");
  ctx.drawImage(st.img, 0, 0);
  st.points.forEach(([u, v]) => { ctx.beginPath(); ctx.arc(u + 0.5, v + 0.5, 6, 0, 2 * Math.PI); ctx.fillStyle = "#43a047"; ctx.fill(); });
}

function show() {
  const it = st.items[st.i];
  if (!it) { document.getElementById("query").textContent = "All items done. Thank you!"; return; }
  const n = it.points_expected;
  document.getElementById("query").textContent = `${it.query} (${it.category}: click ${n === 1 ? "one point" : n + " points"})`;
  st.points = [];
  st.img = new Image();
  st.img.onload = () => { canvas.width = it.width; canvas.height = it.height; render(); };
  st.img.src = it.image_url;
}

canvas.addEventListener("click", (ev) => {
  const r = canvas.getBoundingClientRect();
  // page pixels -> original image pixels (pixel centres at integers)
  const u = (ev.clientX - r.left) * canvas.width / r.width - 0.5, v = (ev.clientY - r.top) * canvas.height / r.height - 0.5;
  st.points.push([u, v]); render();
});
document.getElementById("undo").addEventListener("click", () => { st.points.pop(); render(); });
document.getElementById("submit").addEventListener("click", async () => {
  const it = st.items[st.i];
  if (!it) return;
  const r = await fetch("/api/human/answers", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ item_id: it.id, points: st.points }) });
  const s = await r.json();
  if (!r.ok) { document.getElementById("status").textContent = s.detail || "error"; return; }
  st.done += 1; st.hits += s.success ? 1 : 0;
  document.getElementById("status").textContent = s.success ? "Correct" : `Not quite (${s.reason})`;
  document.getElementById("progress").textContent = `${st.done} answered, ${st.hits} correct`;
  st.i += 1; show();
});

fetch("/api/human/items").then((r) => r.json()).then((d) => { st.items = d.items; show(); });
