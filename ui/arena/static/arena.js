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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The store answers 503 with Retry-After while its database is unreachable (docs/arena.md): say so and
// send the same request again when it says, for about two minutes. Returns the last response.
async function fetchRetrying(url, opts, what) {
  for (let i = 0; ; i++) {
    const r = await fetch(url, opts);
    if (r.status !== 503 || i >= 40) return r;
    const wait = Math.min(30, Math.max(1, parseInt(r.headers.get("Retry-After") || "3", 10) || 3));
    status(`The arena's database is unreachable for the moment; ${what} again in ${wait} s…`, true);
    await sleep(wait * 1000);
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
  const r = await fetchRetrying("/api/battles", { method: "POST", body: fd }, "asking");
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
  ws.onclose = (ev) => {  // 1013: the database is unreachable; the answers wait on the server
    if (ev.code === 1013 && bid === state.battle && state.ws === ws) {
      status("The arena's database is unreachable for the moment; the answers will show when it is back…", true);
      setTimeout(() => { if (bid === state.battle) listen(bid); }, 3000);
    }
  };
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
  const bid = state.battle;
  const r = await fetchRetrying(`/api/battles/${bid}/vote`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ choice }) }, "sending your vote");
  const data = await r.json().catch(() => ({}));
  let reveal = data.reveal;
  if (r.status === 409) {
    // a vote sent during an outage may have been stored before its answer was lost: ask the battle
    const b = await fetch(`/api/battles/${bid}`).then((x) => x.json()).catch(() => ({}));
    if (b.voted && b.reveal) reveal = b.reveal;
  }
  if (!reveal) { status(data.detail || `vote refused (HTTP ${r.status})`, true); return; }
  $("name-A").textContent = "Model A was " + reveal.A;
  $("name-B").textContent = "Model B was " + reveal.B;
  status("Vote recorded. Start another battle!");
}

document.querySelectorAll("#votes button").forEach((b) => b.addEventListener("click", () => vote(b.dataset.choice)));
$("battle-form").addEventListener("submit", startBattle);
$("upload").addEventListener("change", () => { state.image = null; document.querySelectorAll("#gallery img").forEach((x) => x.classList.remove("selected")); });
loadGallery();
