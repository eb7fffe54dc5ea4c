// Human baseline: click the point(s) of each Point-Bench item. No correctness is shown (a baseline
// must not learn from feedback) unless the arena runs a training session (items.feedback).
"use strict";
const st = { items: [], i: 0, points: [], img: null, saved: {}, feedback: false };
const $ = (id) => document.getElementById(id);
const canvas = $("human-canvas");

function render() {
  const ctx = canvas.getContext("2d");
  ctx.drawImage(st.img, 0, 0);
  const r = Math.max(6, canvas.width / 120);
  st.points.forEach(([u, v]) => { ctx.beginPath(); ctx.arc(u + 0.5, v + 0.5, r, 0, 2 * Math.PI); ctx.fillStyle = "#43a047"; ctx.fill();
    ctx.lineWidth = 2; ctx.strokeStyle = "#fff"; ctx.stroke(); });
}

function show() {
  $("confirm").classList.add("hidden");
  const it = st.items[st.i];
  $("back").disabled = st.i === 0;
  if (!it) { $("query").textContent = "All items done. Thank you! You can go back to redo an item."; $("submit").disabled = true; return; }
  $("submit").disabled = false;
  const n = it.points_expected;
  $("query").textContent = `${it.query} (${it.category}: click ${n === 1 ? "one point" : n + " points"})`;
  $("progress").textContent = `item ${st.i + 1} of ${st.items.length}`;
  st.points = (st.saved[it.id] || []).map((p) => p.slice());
  st.img = new Image();
  st.img.onload = () => { canvas.width = it.width; canvas.height = it.height; render(); };
  st.img.src = it.image_url;
}

canvas.addEventListener("click", (ev) => {
  const r = canvas.getBoundingClientRect();
  // page pixels -> original image pixels (pixel centres at integers)
  const u = (ev.clientX - r.left) * canvas.width / r.width - 0.5, v = (ev.clientY - r.top) * canvas.height / r.height - 0.5;
  st.points.push([u, v]); $("confirm").classList.add("hidden"); render();
});
$("undo").addEventListener("click", () => { st.points.pop(); render(); });
$("zoom").addEventListener("click", () => { const z = $("view").classList.toggle("zoom"); $("zoom").textContent = z ? "Fit to screen" : "Zoom 1:1"; });
$("back").addEventListener("click", () => { if (st.i > 0) { st.i -= 1; show(); } });

async function submit() {
  const it = st.items[st.i];
  const r = await fetch("/api/human/answers", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ item_id: it.id, points: st.points }) });
  const s = await r.json();
  if (!r.ok) { $("status").textContent = s.detail || "error"; return; }
  st.saved[it.id] = st.points.slice();
  $("status").textContent = st.feedback ? (s.success ? "Correct" : `Not quite (${s.reason})`) : "Saved.";
  st.i += 1; show();
}
$("submit").addEventListener("click", () => {
  if (!st.items[st.i]) return;
  if (!st.points.length) { $("confirm").classList.remove("hidden"); return; }  // an empty answer is confirmed first
  submit();
});
$("confirm-yes").addEventListener("click", submit);
$("confirm-no").addEventListener("click", () => $("confirm").classList.add("hidden"));

Promise.all([fetch("/api/human/items").then((r) => r.json()), fetch("/api/human/mine").then((r) => r.json())]).then(([d, mine]) => {
  st.items = d.items; st.feedback = d.feedback; st.saved = mine.answers || {};
  st.i = st.items.findIndex((it) => !(it.id in st.saved)); if (st.i < 0) st.i = st.items.length;
  if (!st.items.length) { $("query").textContent = "No Point-Bench items are loaded (start the arena with --data)."; return; }
  show();
});
