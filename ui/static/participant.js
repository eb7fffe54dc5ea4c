// Participant page: live view, instruction, judgement and SUS over one websocket.
"use strict";

const token = decodeURIComponent(location.pathname.split("/").pop());
const $ = (id) => document.getElementById(id);
const canvas = $("live");
let bitmap = null, overlay = null, state = null, ws = null, running = false;
// The frame the agent pointed on ({trial_id, bitmap}): shown with its points, instead of the live
// view, until the trial is judged (by then the arm has acted and the live view shows another scene).
let frozen = null, freezing = null;
let susBlockShown = null;
// read by tests: frame count, JSON messages received, the trial whose frame is shown (or null)
window.__pl = { frames: 0, messages: [], frozen: null };

function show(id, on) { $(id).classList.toggle("hidden", !on); }
function setError(t) { $("error").textContent = t || ""; }
function draw() {
  if (frozen && !(overlay && overlay.trial_id === frozen.trial_id)) { frozen.bitmap.close(); frozen = null; }
  const still = frozen !== null;
  PL.drawFrame(canvas, still ? frozen.bitmap : bitmap, overlay && overlay.points_px, overlay && overlay.frame_size);
  $("view-label").textContent = still ? "The frame the agent saw, with its points (first point red)"
    : overlay ? "Live view with the agent's points" : "Live view";
  window.__pl.frozen = still ? frozen.trial_id : null;
}

// Fetch the frame of the trial in `overlay` once; without it (not kept any more, e.g. after a server
// restart) the points stay drawn on the live view.
async function freeze(trial) {
  if (!trial || (frozen && frozen.trial_id === trial.trial_id) || freezing === trial.trial_id) return;
  freezing = trial.trial_id;
  try {
    const r = await fetch(`/api/me/trials/${encodeURIComponent(trial.trial_id)}/frame`,
                          { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
    if (!r.ok) return;
    const b = await createImageBitmap(await r.blob());
    if (!overlay || overlay.trial_id !== trial.trial_id) { b.close(); return; }  // judged meanwhile
    if (frozen) frozen.bitmap.close();
    frozen = { trial_id: trial.trial_id, bitmap: b };
    draw();
  } catch (e) {
    // a failed fetch or decode leaves the live view with the points
  } finally {
    if (freezing === trial.trial_id) freezing = null;
  }
}

function buildSus(items) {
  // the ten SUS statements (Brooke 1996) come from the server, which scores them (bridge/sus.py)
  const box = $("sus-items");
  box.replaceChildren();
  items.forEach((text, i) => {
    const scale = PL.el("div", { class: "sus-scale" });
    for (let v = 1; v <= 5; v++) {
      scale.append(PL.el("label", {}, PL.el("input", { type: "radio", name: `sus${i + 1}`, value: String(v), "data-item": String(i + 1) }), String(v)));
    }
    box.append(PL.el("div", { class: "sus-item" }, PL.el("span", {}, `${i + 1}. ${text}`), scale));
  });
}

function render() {
  if (!state) return;
  const s = state.step;
  $("progress").textContent = s.kind === "done" ? `${state.label}: finished`
    : `${state.label} · ${s.alias} (${s.block + 1} of ${s.n_blocks})` + (s.trial_number ? ` · trial ${Math.min(s.trial_number, s.trials_per_agent)} of ${s.trials_per_agent}` : "");
  const pos = state.queue_position;
  $("queue").textContent = s.kind === "done" ? "Finished."
    : pos === 0 ? (state.stopped ? "The robot is stopped; the operator will reset it." : "It is your turn: you command the robot.")
    : pos == null ? "Not in the queue." : `You are number ${pos} in the queue (${pos} ${pos === 1 ? "person" : "people"} ahead of you). Please wait.`;
  const myTurn = pos === 0;
  show("trial-box", s.kind === "trial" && myTurn || running);
  $("trial-title").textContent = `${s.alias || ""} · trial ${s.trial_number || ""}`;
  $("action").textContent = state.action;
  $("action").className = "pill " + state.action;
  $("send").disabled = running || state.arm_busy || state.stopped;
  $("instruction").disabled = running;
  if (s.kind === "judge" && state.pending_trial && !running) {
    overlay = state.pending_trial;
    $("judge-text").textContent = `“${overlay.instruction}” — ${overlay.message}`;
    freeze(overlay);  // also after a reload or reconnect
  }
  show("judge-box", s.kind === "judge" && !running);
  const susDue = s.kind === "sus";
  show("sus-box", susDue);
  if (susDue && susBlockShown !== s.block) {
    susBlockShown = s.block;
    $("sus-title").textContent = `Questionnaire about ${s.alias}`;
    buildSus(state.sus_items || []);
  }
  show("done-box", s.kind === "done");
  if (s.kind !== "judge" && !running) overlay = null;  // judged (or nothing to judge): back to the live view
  draw();
}

function onMessage(m) {
  window.__pl.messages.push(m);
  if (m.type === "state") { state = m; render(); }
  else if (m.type === "trial_started") { running = true; overlay = null; $("trial-status").textContent = `${m.alias} is pointing…`; render(); }
  else if (m.type === "trial_result") {
    running = false; overlay = m; $("trial-status").textContent = m.message; $("instruction").value = ""; draw();
    freeze(m);
  }
  else if (m.type === "sus_saved") {
    $("sus-score").textContent = `Your usability score for ${m.alias}: ${PL.fmt(m.score, 1)} / 100`;
    show("sus-score-box", true);
  }
  else if (m.type === "judged") { setError(""); }
  else if (m.type === "error") { running = false; setError(m.error); render(); }
}

function connect() {
  ws = new WebSocket(PL.wsUrl("/ws/participant", token));
  ws.binaryType = "blob";
  ws.onmessage = async (ev) => {
    if (typeof ev.data === "string") {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { setError("The server sent a message this page cannot read."); return; }
      onMessage(m);
      return;
    }
    window.__pl.frames++;
    const b = await createImageBitmap(ev.data);
    if (bitmap) bitmap.close();
    bitmap = b; draw();
  };
  ws.onclose = () => { $("queue").textContent = "Disconnected; reconnecting…"; setTimeout(connect, 1500); };
}

$("instruction-form").addEventListener("submit", (ev) => {
  ev.preventDefault(); setError("");
  ws.send(JSON.stringify({ type: "instruction", text: $("instruction").value }));
});
for (const j of ["succeeded", "failed"]) {
  $(`judge-${j}`).addEventListener("click", () => {
    if (!state || !state.pending_trial) return;
    ws.send(JSON.stringify({ type: "judge", trial_id: state.pending_trial.trial_id, judgement: j }));
  });
}
$("sus-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const responses = [];
  for (let i = 1; i <= 10; i++) {
    const c = document.querySelector(`input[name=sus${i}]:checked`);
    if (!c) { setError(`Please answer question ${i}.`); return; }
    responses.push(Number(c.value));
  }
  setError("");
  ws.send(JSON.stringify({ type: "sus", block: state.step.block, responses }));
});
setInterval(() => { const f = window.__pl.frames; setTimeout(() => { $("fps").textContent = `live view: ${window.__pl.frames - f} frames/s`; }, 1000); }, 2000);
connect();
