// Participant page: live view, block start, instruction, before/after judgement and SUS. Over one
// websocket to `pointlab act`, or over a study server's JSON API (participant_http.js) when the page
// is served by `pointlab act server` (<body data-transport="http">): both hand it the same messages.
"use strict";

const token = decodeURIComponent(location.pathname.split("/").pop());
const $ = (id) => document.getElementById(id);
const canvas = $("live");
let bitmap = null, state = null, transport = null, running = false, starting = false, notice = "";
let judgeScrolled = null;  // the trial whose question was scrolled into view (phones)
let judging = null;      // the trial being judged: {trial_id, points_px, frame_size, ...}
let judgeShown = null;   // trial_id whose before/after frames are on screen
let susBlockShown = null;
let compareShown = null;  // episode_id whose two before/after pairs are on screen
let touched = new Set();  // the progress sliders the participant has set for that episode
let contradictionSeen = false;  // the participant was asked once about a preference against the scores
// read by tests: frame count, JSON messages received, the trial whose frames are shown (or null)
window.__pl = { frames: 0, messages: [], judging: null };

function show(id, on) { $(id).classList.toggle("hidden", !on); }
function setError(t) { $("error").textContent = t || ""; }
function drawLive() { PL.drawFrame(canvas, bitmap, null, null); }

function frame(trialId, which) { return transport.trialFrame(trialId, which); }

// The judgement shows the frame the agent saw with its points beside the frame after the arm
// stopped; the live view keeps running above it the whole time (the participant watched the action).
async function showJudgement(trial) {
  if (judgeShown === trial.trial_id) return;
  judgeShown = trial.trial_id;
  window.__pl.judging = trial.trial_id;
  const before = $("before"), after = $("after");
  before.getContext("2d").clearRect(0, 0, before.width, before.height);
  after.removeAttribute("src");
  try {
    const b = await frame(trial.trial_id, "before");
    if (b && judgeShown === trial.trial_id) {
      const bm = await createImageBitmap(b);
      PL.drawFrame(before, bm, trial.points_px, trial.frame_size);
      bm.close();
    }
    const a = await frame(trial.trial_id, "after");
    if (a && judgeShown === trial.trial_id) {
      after.src = URL.createObjectURL(a);
      await after.decode();  // its height is known only now: the box grows by it
    }
  } catch (e) {
    // a frame no longer kept (a server restart): the question still stands on the live view
  }
  if (judgeShown === trial.trial_id) bringUp("judge-box");
}

// A pairwise episode: both halves' before (with the point) and after frames, then the comparison.
async function drawHalf(half, letter) {
  const before = $(`before-${letter}`), after = $(`after-${letter}`);
  before.getContext("2d").clearRect(0, 0, before.width, before.height);
  after.removeAttribute("src");
  $(`message-${letter}`).textContent = half.message;
  try {
    const b = await frame(half.trial_id, "before");
    if (b) { const bm = await createImageBitmap(b); PL.drawFrame(before, bm, half.points_px, half.frame_size); bm.close(); }
    const a = await frame(half.trial_id, "after");
    if (a) { after.src = URL.createObjectURL(a); await after.decode(); }
  } catch (e) { /* a frame no longer kept: the message still says what happened */ }
}

async function showComparison(ep) {
  if (compareShown === ep.episode_id) return;
  compareShown = ep.episode_id;
  touched = new Set();
  document.querySelectorAll("input[name=preference]").forEach((r) => { r.checked = false; });
  for (const l of ["a", "b"]) {
    $(`progress-${l}`).value = "50"; $(`progress-${l}`).classList.add("unset"); $(`progress-${l}-out`).textContent = "not set";
  }
  contradictionSeen = false;
  $("reason").value = "";
  $("compare-text").textContent = `“${ep.instruction}”: A acted first, then the scene was put back and B acted.`;
  $("anchors").replaceChildren(...(state.progress_anchors || []).map((a) => PL.el("li", {}, `${a.score}: ${a.text}`)));
  for (const h of ep.halves) await drawHalf(h, h.alias.toLowerCase());
  window.__pl.comparing = ep.episode_id;
  bringUp("compare-box");
}

// On a phone the step comes below the live view, off the screen: scroll the whole box into view
// (its Yes/No at the bottom included) when it fits, else its top.
function bringUp(id) {
  if (!window.matchMedia("(max-width: 700px)").matches) return;
  const box = $(id);
  if (box.classList.contains("hidden")) return;
  box.scrollIntoView({ block: box.getBoundingClientRect().height <= window.innerHeight ? "end" : "start" });
}

function buildSus(items) {
  // the ten SUS statements (Brooke 1996) come from the server, which scores them (bridge/study/sus.py)
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
  const pairwise = state.mode === "pairwise";
  $("progress").textContent = s.kind === "done" ? `${state.label}: finished`
    : pairwise ? `${state.label} · episode ${Math.min(s.trial_number || 1, s.trials_per_agent)} of ${s.trials_per_agent}`
    : `${state.label} · ${s.alias} (${s.block + 1} of ${s.n_blocks})` + (s.trial_number ? ` · trial ${Math.min(s.trial_number, s.trials_per_agent)} of ${s.trials_per_agent}` : "");
  const pos = state.queue_position;
  // a study server's page (has_station given): pos is the place in the line for a free station, and
  // whoever is not in that line may go on (a station is given at the block's start)
  const server = "has_station" in state;
  const myTurn = server ? state.has_station || pos == null : pos === 0;
  $("queue-title").textContent = s.kind === "done" ? "Done" : myTurn ? "Your turn" : "Queue";
  $("queue").textContent = s.kind === "done" ? "Finished."
    : server && myTurn ? (state.has_station ? "You command the robot." : "A robot is given to you when you start.")
    : server ? `Waiting for a free robot: you are number ${pos + 1} in line (${pos} ${pos === 1 ? "person" : "people"} ahead of you).`
    : myTurn ? "You command the robot."
    : pos == null ? "Not in the queue." : `You are number ${pos + 1} in the queue (${pos} ${pos === 1 ? "person" : "people"} ahead of you). Please wait.`;
  show("stopped-box", state.stopped || state.not_ready);
  $("stopped-box").textContent = state.stopped ? "The robot is stopped. The operator will reset it."
    : "The operator is getting the robot ready. Please wait.";
  show("setup-box", s.kind === "setup" && myTurn && !running);
  $("setup-title").textContent = `Next: ${s.alias || "the next agent"}`;
  $("start-block").textContent = starting ? "Resetting the robot and the scene…" : `Start ${s.alias || ""}`;
  $("start-block").disabled = starting || state.stopped || state.arm_busy;
  const trialDue = s.kind === "trial" && myTurn;
  show("trial-box", trialDue || running);
  $("trial-title").textContent = (pairwise ? `Episode ${s.trial_number || ""}: two robots, one after the other`
    : `${s.alias || ""} · trial ${s.trial_number || ""}`) + (s.repeat ? " (again)" : "");
  $("action").textContent = state.action;
  $("action").className = "pill " + state.action;
  $("instruction").placeholder = state.action === "place" ? "e.g. put it in the blue bowl" : "e.g. pick up the red block";
  $("send").disabled = running || state.arm_busy || state.stopped || state.not_ready;
  // after a reload in the middle of one's own trial (a study server's page: the robot is busy at the
  // participant's own station), say why Send waits; the result comes with the next state
  const BUSY_NOTE = "The robot is carrying out your last instruction; its result comes here.";
  if (!running && trialDue && state.arm_busy && state.has_station && !$("trial-status").textContent) {
    $("trial-status").textContent = BUSY_NOTE;
  } else if (!(trialDue && state.arm_busy) && $("trial-status").textContent === BUSY_NOTE) {
    $("trial-status").textContent = "";  // (a poll from before the result came may have set it)
  }
  $("instruction").disabled = running;
  if (s.kind === "judge" && state.pending_trial && !running) {
    judging = state.pending_trial;
    $("judge-text").textContent = `“${judging.instruction}” — ${judging.message}`;
    showJudgement(judging);  // also after a reload or reconnect
  } else if (!running) {
    judging = null; judgeShown = null; window.__pl.judging = null;
  }
  show("judge-box", s.kind === "judge" && !running && judging !== null);
  // on a phone the question comes below the live view, off the screen: bring it up once per trial
  // (again when its frames have loaded, showJudgement)
  if (s.kind === "judge" && !running && judging !== null && judgeScrolled !== judging.trial_id) {
    judgeScrolled = judging.trial_id;
    bringUp("judge-box");
  }
  // judging: the before/after pair gets half the page instead of the narrow side column
  document.body.classList.toggle("judging", s.kind === "judge" && !running && judging !== null);
  const comparing = s.kind === "compare" && !running && !!state.pending_episode;
  show("compare-box", comparing);
  if (comparing) showComparison(state.pending_episode);  // also after a reload or reconnect
  else if (!running) { compareShown = null; window.__pl.comparing = null; }
  if (comparing) document.body.classList.add("judging");  // the two pairs get half the page too
  show("notice-box", !!notice && s.kind !== "judge" && !comparing);
  $("notice").textContent = notice;
  const susDue = s.kind === "sus";
  show("sus-box", susDue);
  if (susDue && susBlockShown !== s.block) {
    susBlockShown = s.block;
    $("sus-title").textContent = `Questionnaire about ${s.alias}`;
    buildSus(state.sus_items || []);
  }
  show("done-box", s.kind === "done");
  // the frame rate is only shown for the moving live view
  $("fps").classList.toggle("hidden", !bitmap);
}

function onMessage(m) {
  window.__pl.messages.push(m);
  if (m.type === "state") {
    // the robot became ready again: an error that said it was not ready no longer holds
    if (state && (state.stopped || state.not_ready) && !m.stopped && !m.not_ready) setError("");
    // a study server gave this participant a station: "waiting for a free robot station" no longer holds
    if (state && state.has_station === false && m.has_station) setError("");
    state = m;
    // the block has started, by whatever path (the operator's scene reset sends the participant no
    // block_started): the start button is no longer waiting
    if (m.step && m.step.kind !== "setup") starting = false;
    render();
  }
  else if (m.type === "block_started") { starting = false; notice = ""; render(); }
  else if (m.type === "waiting_for_station") { starting = false; notice = m.detail; render(); }
  else if (m.type === "waiting_for_scene") {
    if (state && state.mode === "pairwise") { running = true; $("trial-status").textContent = `The operator is putting the scene back for ${m.alias}…`; render(); }
    else { $("start-block").textContent = "The operator is resetting the scene…"; $("start-block").disabled = true; }
  }
  else if (m.type === "trial_started") {
    running = true; notice = ""; $("trial-status").textContent = `${m.alias} is pointing… watch the live view.`; render();
  }
  else if (m.type === "trial_result") {
    running = false; $("instruction").value = ""; $("trial-status").textContent = "";
    // neither an aborted trial (it does not count; the slot may come again) nor a refusal (the robot
    // did not move: it counts as not carried out) is a question: the message says what happened
    notice = m.outcome === "aborted" || m.outcome === "refused" ? m.message : "";
    render();
  }
  else if (m.type === "episode_result") {
    running = false; $("instruction").value = ""; $("trial-status").textContent = "";
    // a void episode (a half did not count) is not compared: say why, its slot comes again
    const aborted = m.halves.find((h) => h.outcome === "aborted");
    notice = m.void ? (aborted ? aborted.message : "This episode does not count.") : "";
    render();
  }
  else if (m.type === "compared") { setError(""); notice = "Thank you: your comparison is saved."; render(); }
  else if (m.type === "sus_saved") { notice = `Thank you: your answers about ${m.alias} are saved.`; render(); }
  else if (m.type === "judged") { setError(""); }
  else if (m.type === "error") {
    // nothing runs after an error: "... is pointing" no longer holds
    running = false; starting = false; $("trial-status").textContent = ""; setError(m.error); render();
  }
}

async function onFrame(blob) {
  window.__pl.frames++;
  const b = await createImageBitmap(blob);
  const first = !bitmap;
  if (bitmap) bitmap.close();
  bitmap = b; drawLive();
  if (first) $("fps").classList.remove("hidden");  // the state may have been drawn before this frame
}

function onFatal(text) { $("queue").textContent = text; }

// `pointlab act`: one websocket carries the state, the events and the live view's JPEG frames.
function wsTransport(on) {
  let ws = null;
  function connect() {
    ws = new WebSocket(PL.wsUrl("/ws/participant", token));
    ws.binaryType = "blob";
    ws.onmessage = async (ev) => {
      if (typeof ev.data === "string") {
        let m;
        try { m = JSON.parse(ev.data); } catch (e) { setError("The server sent a message this page cannot read."); return; }
        if (m.type === "error" && m.fatal) { ws.onclose = null; on.fatal(m.error); return; }
        on.message(m);
        return;
      }
      await on.frame(ev.data);
    };
    ws.onclose = (ev) => {
      if (ev.code === 4401) { on.fatal("This invite link is not valid. Ask the operator for a new one."); return; }
      on.status("Disconnected; reconnecting…"); setTimeout(connect, 1500);
    };
  }
  connect();
  return {
    send(m) { ws.send(JSON.stringify(m)); },
    async trialFrame(trialId, which) {
      const r = await fetch(`/api/me/trials/${encodeURIComponent(trialId)}/frame?which=${which}`,
                            { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
      return r.ok ? await r.blob() : null;
    },
  };
}

$("start-block").addEventListener("click", () => {
  setError(""); starting = true; render();
  transport.send({ type: "start_block" });
});
$("instruction-form").addEventListener("submit", (ev) => {
  ev.preventDefault(); setError(""); $("trial-status").textContent = "";
  transport.send({ type: "instruction", text: $("instruction").value });
});
for (const j of ["succeeded", "failed"]) {
  $(`judge-${j}`).addEventListener("click", () => {
    if (!state || !state.pending_trial) return;
    transport.send({ type: "judge", trial_id: state.pending_trial.trial_id, judgement: j });
  });
}
// a slider counts as set once it is moved, clicked or keyed (a click on the thumb at 50 means 50);
// until then it is drawn greyed ("unset") so an untouched 50 does not look like an answer
for (const l of ["a", "b"]) {
  const mark = () => {
    touched.add(l); $(`progress-${l}`).classList.remove("unset");
    $(`progress-${l}-out`).textContent = $(`progress-${l}`).value;
  };
  for (const ev of ["input", "change", "pointerup", "keyup"]) $(`progress-${l}`).addEventListener(ev, mark);
}
$("compare-submit").addEventListener("click", () => {
  const ep = state && state.pending_episode;
  if (!ep) return;
  const pref = document.querySelector("input[name=preference]:checked");
  if (!pref) { setError("Please say which did better (or that they were about the same)."); return; }
  for (const l of ["a", "b"]) if (!touched.has(l)) { setError(`Please set how far ${l.toUpperCase()} got.`); return; }
  // a preference against the progress scores is allowed (the reason may say why) but asked once
  const pa = Number($("progress-a").value), pb = Number($("progress-b").value);
  const against = (pref.value === "A" && pa < pb) || (pref.value === "B" && pb < pa);
  if (against && !contradictionSeen) {
    contradictionSeen = true;
    setError(`You said ${pref.value} did better but gave ${pref.value === "A" ? "B" : "A"} more progress. ` +
             "Press Submit again to keep these answers, or change one.");
    return;
  }
  setError("");
  transport.send({ type: "compare", episode_id: ep.episode_id, preference: pref.value,
                   progress_a: Number($("progress-a").value), progress_b: Number($("progress-b").value), reason: $("reason").value });
});
$("sus-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const responses = [];
  for (let i = 1; i <= 10; i++) {
    const c = document.querySelector(`input[name=sus${i}]:checked`);
    if (!c) { setError(`Please answer question ${i}.`); return; }
    responses.push(Number(c.value));
  }
  setError("");
  transport.send({ type: "sus", block: state.step.block, responses });
});
setInterval(() => { const f = window.__pl.frames; setTimeout(() => { $("fps").textContent = ` · ${window.__pl.frames - f} frames/s`; }, 1000); }, 2000);
const handlers = { message: onMessage, frame: onFrame, fatal: onFatal, status: (t) => { $("queue").textContent = t; } };
transport = document.body.dataset.transport === "http" ? window.PLHttpTransport(token, handlers) : wsTransport(handlers);
