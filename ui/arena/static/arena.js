// Point-Battle page: start a battle, draw both anonymous answers, vote, then show the names.
"use strict";
const $ = (id) => document.getElementById(id);
const state = { image: null, battle: null, img: null, answers: {}, ws: null };
const COLOURS = { A: "#e53935", B: "#1e88e5" };

function status(msg, isError) { const s = $("status"); s.textContent = msg; s.className = "status" + (isError ? " error" : ""); }
function voteButtons(enabled) { document.querySelectorAll("#votes button").forEach((b) => { b.disabled = !enabled; }); }

async function loadGallery() {
  const r = await fetch("/api/images");
  const data = await r.json();
  const g = $("gallery");
  data.images.forEach((im) => {
    const el = document.createElement("img");
    el.src = im.url; el.alt = im.name; el.dataset.name = im.name;
    el.addEventListener("click", () => {
      document.querySelectorAll("#gallery img").forEach((x) => x.classList.remove("selected"));
      el.classList.add("selected"); state.image = im.name; $("upload").value = "";
    });
    g.appendChild(el);
  });
}

function draw(side) {
  const c = $("canvas-" + side);
  if (!state.img) return;
  c.width = state.img.naturalWidth; c.height = state.img.naturalHeight;
  const ctx = c.getContext("2d");
  ctx.drawImage(state.img, 0, 0);
  const a = state.answers[side];
  if (!a) return;
  const r = Math.max(5, Math.round(Math.min(c.width, c.height) / 60));
  a.points.forEach(([u, v]) => {
    // pixel (u, v) has its centre at canvas coordinate (u + 0.5, v + 0.5)
    ctx.beginPath(); ctx.arc(u + 0.5, v + 0.5, r, 0, 2 * Math.PI);
    ctx.fillStyle = COLOURS[side]; ctx.fill(); ctx.lineWidth = 2; ctx.strokeStyle = "#fff"; ctx.stroke();
  });
  if (a.failed && !a.points.length) {
    const fs = Math.max(20, Math.round(c.width / 20));
    ctx.fillStyle = "rgba(255,255,255,.85)"; ctx.fillRect(0, 0, c.width, fs * 1.6);
    ctx.fillStyle = "#b71c1c"; ctx.font = `bold ${fs}px sans-serif`; ctx.fillText("no point", fs / 2, fs * 1.15);
  }
}

async function startBattle(ev) {
  ev.preventDefault();
  voteButtons(false);
  ["A", "B"].forEach((s) => { $("name-" + s).textContent = ""; });
  state.answers = {};
  const fd = new FormData();
  fd.append("instruction", $("instruction").value);
  const file = $("upload").files[0];
  if (file) fd.append("upload", file); else if (state.image) fd.append("image_name", state.image);
  else { status("Choose an image or upload one.", true); return; }
  status("Asking both models…");
  $("start").disabled = true;
  const r = await fetch("/api/battles", { method: "POST", body: fd });
  const data = await r.json().catch(() => ({}));
  $("start").disabled = false;
  if (!r.ok) { status(data.detail || `could not start the battle (HTTP ${r.status})`, true); return; }
  state.battle = data.battle_id;
  state.img = new Image();
  state.img.onload = () => { draw("A"); draw("B"); listen(data.battle_id); };
  state.img.src = data.image_url;
}

function listen(bid) {
  if (state.ws) state.ws.close();
  const proto = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${location.host}/api/battles/${bid}/ws`);
  state.ws = ws;
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (bid !== state.battle) return;
    if (m.type === "answer") { state.answers[m.side] = m; draw(m.side); status(`Answer ${m.side} received.`); }
    else if (m.type === "ready") { voteButtons(true); status("Both answers shown: which is better?"); }
    else if (m.type === "error") { status(m.message, true); }
  };
}

async function vote(choice) {
  voteButtons(false);
  const r = await fetch(`/api/battles/${state.battle}/vote`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ choice }) });
  const data = await r.json();
  if (!r.ok) { status(data.detail || "vote refused", true); return; }
  $("name-A").textContent = "Model A was " + data.reveal.A;
  $("name-B").textContent = "Model B was " + data.reveal.B;
  status("Vote recorded. Start another battle!");
}

document.querySelectorAll("#votes button").forEach((b) => b.addEventListener("click", () => vote(b.dataset.choice)));
$("battle-form").addEventListener("submit", startBattle);
$("upload").addEventListener("change", () => { state.image = null; document.querySelectorAll("#gallery img").forEach((x) => x.classList.remove("selected")); });
loadGallery();
