// Point-Bench annotation: query -> anonymous models -> masks drawn at full resolution -> submit.
// Masks are kept as one Uint8Array (W*H, 1 = target) per instance; every edit is undoable.
"use strict";
const $ = (id) => document.getElementById(id);
const token = PL.fragmentParam("token");
const COLOURS = [[255, 0, 255], [0, 255, 255], [255, 255, 0], [0, 255, 0], [255, 128, 0]];  // tints that stand out on any object
const MODEL_COLOURS = ["#ff2d55", "#ffcc00", "#00c7be", "#af52de", "#34c759"];
const st = { cands: [], ci: 0, img: null, W: 0, H: 0, layers: [], active: 0, undo: [], tool: "seed", poly: [],
             ask: null, answers: [], ref: null, drawing: false, last: null };
const canvas = $("canvas");

function status(msg, bad) { $("status").textContent = msg; $("status").className = bad ? "error" : "muted"; }
function api(method, path, body) { return PL.api(method, path, token, body); }

function toImage(ev) {
  const r = canvas.getBoundingClientRect();
  // CSS pixels -> image pixels (pixel centres at integers)
  return [(ev.clientX - r.left) * st.W / r.width - 0.5, (ev.clientY - r.top) * st.H / r.height - 0.5];
}

function render() {
  if (!st.img) return;
  const g = canvas.getContext("2d");
  g.drawImage(st.img, 0, 0);
  const over = g.getImageData(0, 0, st.W, st.H), d = over.data;
  st.layers.forEach((L, k) => {
    const [r, gg, b] = COLOURS[k % COLOURS.length], a = k === st.active ? 0.6 : 0.45;
    for (let i = 0; i < L.length; i++) if (L[i]) {
      const j = 4 * i; d[j] = d[j] * (1 - a) + r * a; d[j + 1] = d[j + 1] * (1 - a) + gg * a; d[j + 2] = d[j + 2] * (1 - a) + b * a;
    }
  });
  g.putImageData(over, 0, 0);
  const R = Math.max(5, st.W / 100);
  st.answers.forEach((a, k) => a.points.forEach(([u, v]) => {
    g.beginPath(); g.arc(u + 0.5, v + 0.5, R, 0, 2 * Math.PI); g.lineWidth = Math.max(2, R / 3);
    g.strokeStyle = MODEL_COLOURS[k % MODEL_COLOURS.length]; g.stroke();
    g.fillStyle = MODEL_COLOURS[k % MODEL_COLOURS.length]; g.font = `bold ${Math.round(R * 2)}px sans-serif`;
    g.fillText(String(k + 1), u + R + 2, v - R);
  }));
  if (st.poly.length) {
    g.beginPath(); st.poly.forEach(([u, v], i) => (i ? g.lineTo(u + 0.5, v + 0.5) : g.moveTo(u + 0.5, v + 0.5)));
    g.strokeStyle = "#fff"; g.lineWidth = 2; g.setLineDash([6, 4]); g.stroke(); g.setLineDash([]);
  }
  if (st.ref) { g.beginPath(); g.arc(st.ref[0] + 0.5, st.ref[1] + 0.5, R, 0, 2 * Math.PI); g.fillStyle = "#f00"; g.fill(); }
  renderInstances();
}

function renderInstances() {
  const box = $("instances"); box.innerHTML = "";
  st.layers.forEach((L, k) => {
    let n = 0; for (let i = 0; i < L.length; i++) n += L[i];
    const b = PL.el("button", { class: k === st.active ? "on" : "", "data-instance": k },
      PL.el("span", { class: "swatch", style: `background: rgb(${COLOURS[k % COLOURS.length].join(",")})` }), `instance ${k + 1} (${n} px)`);
    b.addEventListener("click", () => { st.active = k; render(); });
    box.appendChild(b);
  });
}

function snapshot() { st.undo.push({ k: st.active, data: st.layers[st.active].slice(), n: st.layers.length }); if (st.undo.length > 50) st.undo.shift(); }
function dab(u, v, value) {
  const L = st.layers[st.active], r = Math.max(1, Number($("brush").value) || 8);
  const c = Math.round(u), rr = Math.round(v);
  for (let y = Math.max(0, rr - r); y <= Math.min(st.H - 1, rr + r); y++)
    for (let x = Math.max(0, c - r); x <= Math.min(st.W - 1, c + r); x++)
      if ((x - u) ** 2 + (y - v) ** 2 <= r * r) L[y * st.W + x] = value;
}
function stroke(from, to, value) {
  const steps = Math.max(1, Math.ceil(Math.hypot(to[0] - from[0], to[1] - from[1]) / 2));
  for (let s = 0; s <= steps; s++) dab(from[0] + (to[0] - from[0]) * s / steps, from[1] + (to[1] - from[1]) * s / steps, value);
}
function fillPolygon(points, value) {
  const off = document.createElement("canvas"); off.width = st.W; off.height = st.H;
  const g = off.getContext("2d"); g.fillStyle = "#fff"; g.beginPath();
  points.forEach(([u, v], i) => (i ? g.lineTo(u + 0.5, v + 0.5) : g.moveTo(u + 0.5, v + 0.5))); g.closePath(); g.fill();
  const d = g.getImageData(0, 0, st.W, st.H).data, L = st.layers[st.active];
  for (let i = 0; i < L.length; i++) if (d[4 * i + 3] > 127) L[i] = value;
}

canvas.addEventListener("pointerdown", async (ev) => {
  if (!st.img) return;
  const p = toImage(ev);
  if (st.tool === "brush" || st.tool === "erase") {
    snapshot(); st.drawing = true; st.last = p; dab(p[0], p[1], st.tool === "brush" ? 1 : 0); render(); return;
  }
  if (st.tool === "poly" || st.tool === "polyerase") { st.poly.push(p); render(); return; }
  if (st.tool === "ref") { st.ref = p; render(); return; }
  // seed: the server proposes a mask around the click; it is added to the active instance
  status("Seeding a mask…");
  try {
    const r = await fetch(`/api/candidates/${cand().id}/seed`, { method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify({ u: p[0], v: p[1] }) });
    if (!r.ok) throw new Error((await r.json()).detail || `HTTP ${r.status}`);
    const bmp = await createImageBitmap(await r.blob());
    const off = document.createElement("canvas"); off.width = st.W; off.height = st.H;
    const g = off.getContext("2d"); g.drawImage(bmp, 0, 0);
    const d = g.getImageData(0, 0, st.W, st.H).data, L = st.layers[st.active];
    snapshot();
    for (let i = 0; i < L.length; i++) if (d[4 * i] > 127) L[i] = 1;
    status("Seeded: refine with the brush or polygons, then submit."); render();
  } catch (e) { status(`Seeding failed: ${e.message}`, true); }
});
canvas.addEventListener("pointermove", (ev) => {
  if (!st.drawing) return;
  const p = toImage(ev); stroke(st.last, p, st.tool === "brush" ? 1 : 0); st.last = p; render();
});
window.addEventListener("pointerup", () => { st.drawing = false; });

$("close-poly").addEventListener("click", () => {
  if (st.poly.length < 3) { status("A polygon needs at least 3 points.", true); return; }
  snapshot(); fillPolygon(st.poly, st.tool === "polyerase" ? 0 : 1); st.poly = []; render();
});
$("undo").addEventListener("click", () => {
  if (st.poly.length) { st.poly.pop(); render(); return; }
  const u = st.undo.pop(); if (!u) return;
  st.layers.length = u.n; st.layers[u.k] = u.data; st.active = Math.min(u.k, st.layers.length - 1); render();
});
$("new-instance").addEventListener("click", () => { snapshot(); st.layers.push(new Uint8Array(st.W * st.H)); st.active = st.layers.length - 1; render(); });
$("clear").addEventListener("click", () => { snapshot(); st.layers[st.active].fill(0); render(); });
$("zoom").addEventListener("click", () => { const z = $("editor").classList.toggle("zoom"); $("zoom").textContent = z ? "Fit" : "Zoom 1:1"; });
document.querySelectorAll("#tools button").forEach((b) => b.addEventListener("click", () => {
  document.querySelectorAll("#tools button").forEach((x) => x.classList.remove("on")); b.classList.add("on"); st.tool = b.dataset.tool; st.poly = []; render();
}));

function cand() { return st.cands[st.ci]; }
function load() {
  $("keep").classList.add("hidden");
  const c = cand();
  if (!c) { $("progress").textContent = "no images left to annotate"; st.img = null; canvas.width = 1; return; }
  // the list holds the images still to annotate (a submitted one leaves it), so say "left"
  $("progress").textContent = `image ${st.ci + 1} of ${st.cands.length} left to annotate`;
  $("query").value = c.suggested_query || ""; st.ask = null; st.answers = []; st.ref = null; st.poly = []; st.undo = [];
  $("models").innerHTML = "";
  const img = new Image();
  img.onload = () => { st.img = img; st.W = img.naturalWidth; st.H = img.naturalHeight; canvas.width = st.W; canvas.height = st.H;
    st.layers = [new Uint8Array(st.W * st.H)]; st.active = 0; render(); };
  fetch(c.image_url, { headers: { Authorization: `Bearer ${token}` } }).then((r) => r.blob()).then((b) => { img.src = URL.createObjectURL(b); });
}

$("ask").addEventListener("click", async () => {
  const q = $("query").value.trim();
  if (!q) { status("Write a query first.", true); return; }
  status("Asking the models…");
  try {
    const r = await api("POST", `/api/candidates/${cand().id}/ask`, { query: q });
    st.ask = r.ask_id; st.answers = r.answers;
    $("models").innerHTML = "";
    r.answers.forEach((a, k) => $("models").appendChild(PL.el("li", {},
      PL.el("span", { class: "swatch", style: `background:${MODEL_COLOURS[k % MODEL_COLOURS.length]}` }),
      `${a.alias}: ${a.failed ? "no point" : a.points.map((p) => `(${p[0].toFixed(0)}, ${p[1].toFixed(0)})`).join(" ")}`)));
    status("Draw the target mask(s); each model's answer is checked against them when you submit.");
    render();
  } catch (e) { status(e.message, true); }
});

async function layerPng(L) {
  const off = document.createElement("canvas"); off.width = st.W; off.height = st.H;
  const g = off.getContext("2d"), im = g.createImageData(st.W, st.H);
  for (let i = 0; i < L.length; i++) { const v = L[i] ? 255 : 0, j = 4 * i; im.data[j] = im.data[j + 1] = im.data[j + 2] = v; im.data[j + 3] = 255; }
  g.putImageData(im, 0, 0);
  return new Promise((res) => off.toBlob(res, "image/png"));
}

async function submit(keep) {
  if (!st.ask) { status("Ask the models first (the filter needs their answers).", true); return; }
  if ($("query").value.trim() !== "" && st.answers.length === 0) { status("Ask the models first.", true); return; }
  const fd = new FormData();
  fd.append("ask_id", st.ask); fd.append("category", $("category").value); fd.append("keep_anyway", keep ? "true" : "false");
  if (st.ref) fd.append("reference", JSON.stringify([st.ref]));
  const nonEmpty = st.layers.filter((L) => L.some((x) => x));
  if (!nonEmpty.length) { status("Draw at least one mask.", true); return; }
  for (let k = 0; k < nonEmpty.length; k++) fd.append("masks", await layerPng(nonEmpty[k]), `instance${k}.png`);
  const r = await fetch(`/api/candidates/${cand().id}/items`, { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: fd });
  const data = await r.json();
  if (r.status === 409) {
    status(data.detail.message, true); $("keep").classList.remove("hidden"); return;
  }
  if (!r.ok) { status(typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail), true); return; }
  const n = data.model_results.filter((m) => m.correct).length;
  status(`Submitted (${n} of ${data.model_results.length} models correct${data.filter_passed ? "" : ", kept anyway"}); waiting for verification.`);
  st.cands.splice(st.ci, 1); if (st.ci >= st.cands.length) st.ci = 0; load();
}
$("submit").addEventListener("click", () => submit(false));
$("keep").addEventListener("click", () => submit(true));
$("skip").addEventListener("click", () => { st.ci = (st.ci + 1) % Math.max(1, st.cands.length); load(); });

(async () => {
  if (!token) { status("Open this page with your link (…/#token=…).", true); return; }
  $("nav-verify").href = `/verify#token=${encodeURIComponent(token)}`; $("nav-draw").href = `/#token=${encodeURIComponent(token)}`;
  try {
    const me = await api("GET", "/api/me"); $("who").textContent = `annotator: ${me.name}`;
    st.cands = (await api("GET", "/api/candidates")).candidates; load();
  } catch (e) { status(e.message, true); }
})();
