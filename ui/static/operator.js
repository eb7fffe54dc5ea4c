// Operator console: studies, invitations, live queue, human reference clicks, stop/reset/home,
// scene resets with the reference overlay, trial abort.
"use strict";

const token = PL.fragmentParam("token") || "";
const $ = (id) => document.getElementById(id);
const canvas = $("live");
let bitmap = null, currentRequest = null, reference = null, referenceStudy = null, alerted = null;
// requests this console already answered or declined: a status sent before the server took the
// answer still lists them, and showing the box again would invite a second click
const answered = new Set();
let studies = [];
window.__pl = { frames: 0, alerts: 0, status: null };

function setError(t) { $("error").textContent = t || ""; }
async function call(method, path, body) {
  try { setError(""); return await PL.api(method, path, token, body); }
  catch (e) { setError(e.message); throw e; }
}

async function loadAgents() {
  const agents = await call("GET", "/api/agents");
  $("agents").replaceChildren(...agents.map((a) =>
    PL.el("label", {}, PL.el("input", { type: "checkbox", value: a, checked: "" }), " " + a)));
}

async function loadStudies(selectId) {
  studies = await call("GET", "/api/studies");
  const sel = $("study");
  sel.replaceChildren(...studies.map((s) => PL.el("option", { value: String(s.id) },
    `#${s.id} ${s.name || s.scene || ""} (${s.agents.join(", ")}; ` +
    (s.mode === "pairwise" ? `pairwise, ${s.trials_per_agent} episodes/participant; ` : `${s.trials_per_agent}/agent; `) +
    `reveal ${s.reveal_low_s}–${s.reveal_high_s} s)`)));
  if (selectId) sel.value = String(selectId);
  else if (studies.length) sel.value = String(studies[studies.length - 1].id);
  await loadParticipants();
  await loadReference();
}

async function loadParticipants() {
  const sid = $("study").value;
  $("results-link").href = `/results#token=${encodeURIComponent(token)}` + (sid ? `&study=${sid}` : "");
  if (!sid) { $("participants").replaceChildren(); return; }
  const ps = await call("GET", `/api/studies/${sid}/participants`);
  // a pairwise study has no agent blocks: its pairs are drawn per episode, so there is no order to show
  const pairwise = (studies.find((s) => String(s.id) === sid) || {}).mode === "pairwise";
  $("participants").replaceChildren(...ps.map((p) => {
    const copy = PL.el("button", { type: "button", class: "copy", title: "Copy the invite link" }, "Copy");
    copy.addEventListener("click", async () => {
      try { await navigator.clipboard.writeText(p.url); copy.textContent = "Copied"; }
      catch (e) { window.prompt("Copy the invite link:", p.url); }
      setTimeout(() => { copy.textContent = "Copy"; }, 1500);
    });
    return PL.el("tr", {}, PL.el("td", {}, p.label), PL.el("td", {}, pairwise ? "pairs drawn per episode" : p.agent_order.join(" → ")),
      PL.el("td", {}, PL.el("div", { class: "row" }, copy,
        PL.el("a", { href: p.url, target: "_blank", class: "invite-link" }, PL.el("code", { class: "link" }, p.url)))));
  }));
}

async function loadReference() {
  const sid = $("study").value;
  if (reference) { reference.close(); reference = null; }
  referenceStudy = sid;
  $("ref-state").textContent = "";
  if (!sid) return;
  const auth = { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" };
  const state = await fetch(`/api/studies/${sid}/reference`, auth);
  const captured = state.ok && (await state.json()).captured;
  const r = captured ? await fetch(`/api/studies/${sid}/reference.jpg`, auth) : null;
  if (r && r.ok && referenceStudy === sid) { reference = await createImageBitmap(await r.blob()); $("ref-state").textContent = "reference captured"; }
  else $("ref-state").textContent = "no reference yet";
}

// The live view, or the live view with the study's reference over it: "blend" at half opacity, or
// "difference" (what moved shows bright), for putting the scene back as it was.
function drawLive() {
  if (!bitmap) return;
  PL.drawFrame(canvas, bitmap);
  const mode = $("overlay").value;
  if (mode === "off" || !reference) return;
  const g = canvas.getContext("2d");
  g.save();
  if (mode === "blend") g.globalAlpha = 0.5; else g.globalCompositeOperation = "difference";
  g.drawImage(reference, 0, 0, canvas.width, canvas.height);
  g.restore();
}

$("study-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const agents = [...document.querySelectorAll("#agents input:checked")].map((c) => c.value);
  const s = await call("POST", "/api/studies", {
    agents, trials_per_agent: Number($("tpa").value), scene: $("scene").value, name: $("study-name").value,
    max_repeats: Number($("max-repeats").value), reveal_low_s: Number($("reveal-low").value),
    reveal_high_s: Number($("reveal-high").value), min_free_mb: Number($("min-free").value),
    mode: $("mode").value, pair_sampling: $("pair-sampling").value });
  await loadStudies(s.id);
});
// in a pairwise study the count is each participant's episodes (two agents act in every episode)
$("mode").addEventListener("change", () => {
  const pairwise = $("mode").value === "pairwise";
  $("tpa-label").textContent = pairwise ? "Episodes per participant" : "Trials per agent";
  $("pair-sampling").disabled = !pairwise;
});
$("pair-sampling").disabled = true;
$("study").addEventListener("change", () => { loadParticipants(); loadReference(); });
$("invite").addEventListener("click", async () => {
  const sid = $("study").value;
  if (!sid) { setError("create a study first"); return; }
  await call("POST", `/api/studies/${sid}/participants`, { label: $("invite-label").value });
  $("invite-label").value = "";
  await loadParticipants();
});
$("estop").addEventListener("click", () => call("POST", "/api/arm/stop"));
$("reset").addEventListener("click", () => call("POST", "/api/arm/reset"));
$("home").addEventListener("click", () => call("POST", "/api/arm/home").catch(() => {}));
$("scene-reset").addEventListener("click", () => call("POST", "/api/scene/reset").catch(() => {}));
$("abort").addEventListener("click", () => call("POST", "/api/trials/abort").catch(() => {}));
$("release").addEventListener("click", () => call("POST", "/api/arm/release").catch(() => {}));
$("overlay").addEventListener("change", drawLive);
$("capture-ref").addEventListener("click", async () => {
  const sid = $("study").value;
  if (!sid) { setError("create a study first"); return; }
  await call("POST", `/api/studies/${sid}/reference`);
  await loadReference();
});

$("decline").addEventListener("click", async () => {
  if (!currentRequest) return;
  const req = currentRequest;
  currentRequest = null;
  answered.add(req.request_id);
  $("human-box").classList.add("hidden");
  document.title = "Point-Act operator";
  await call("POST", `/api/human-requests/${req.request_id}/decline`);
});

// A click on the displayed image -> original-image pixels. The displayed image spans
// [-0.5, W - 0.5] in u (pixel centres at integers), so u = x / displayed_width * W - 0.5.
$("human-img").addEventListener("click", async (ev) => {
  if (!currentRequest) return;
  // Measure inside the border: clientLeft/clientTop are the border widths, clientWidth/Height the image box.
  const img = ev.currentTarget, r = img.getBoundingClientRect();
  const x = ev.clientX - r.left - img.clientLeft, y = ev.clientY - r.top - img.clientTop;
  const u = x / img.clientWidth * currentRequest.width - 0.5;
  const v = y / img.clientHeight * currentRequest.height - 0.5;
  const req = currentRequest;
  currentRequest = null;
  answered.add(req.request_id);
  $("human-box").classList.add("hidden");
  document.title = "Point-Act operator";
  await call("POST", `/api/human-requests/${req.request_id}/answer`, { u, v });
});

// A click is wanted: say so visibly and audibly once per request (the operator may be looking at the arm).
function alertFor(r) {
  if (alerted === r.request_id) return;
  alerted = r.request_id;
  window.__pl.alerts++;
  document.title = `CLICK to ${r.action || "point"} · Point-Act operator`;
  PL.beep();
}

async function showRequests(all) {
  const reqs = all.filter((r) => !answered.has(r.request_id));
  if (!reqs.length) { currentRequest = null; $("human-box").classList.add("hidden"); document.title = "Point-Act operator"; return; }
  if (currentRequest && reqs.some((r) => r.request_id === currentRequest.request_id)) return;
  const r = reqs[0];
  $("human-img").src = `data:image/jpeg;base64,${(await call("GET", "/api/human-requests")).find((x) => x.request_id === r.request_id)?.jpeg_b64 || ""}`;
  $("human-title").textContent = `Human reference: click where the robot should ${(r.action || "act").toUpperCase()}`;
  $("human-instruction").textContent = `“${r.instruction}”`;
  currentRequest = r;
  $("human-box").classList.remove("hidden");
  alertFor(r);
}

function onStatus(s) {
  window.__pl.status = s;
  const c = s.current;
  $("current").textContent = c ? `${c.participant_label} · ${c.alias} = ${c.agent} · ${c.action}: “${c.instruction}”` : "none";
  $("abort").disabled = !c;
  $("queue").replaceChildren(...s.queue.map((q) => PL.el("li", {}, `${q.label} (study #${q.study_id})` + (q.position === 0 ? " — in control " : " "),
    s.queue.length > 1 ? PL.el("button", { type: "button", onclick: () => call("POST", `/api/queue/${q.participant_id}/to-back`) }, "move to back") : "")));
  const a = s.arm_state || {};
  const tcp = a.tcp && a.tcp.position_m ? a.tcp.position_m.map((x) => (1000 * x).toFixed(0).replace(/^-0$/, "0")).join(", ") + " mm" : "?";
  const b = s.belief || {};
  const held = b.holding ? (b.object || "something") : "nothing";
  $("arm").textContent = `holds: ${held} (${b.source || "?"}) · next: ${b.holding ? "place" : "pick"} · TCP ${tcp}` +
    (a.fault ? ` · fault: ${a.fault}` : "") + (a.error_code ? ` · error ${a.error_code}` : "");
  // the gripper has no sensor: when the last pick could not be seen to lift anything, say so beside Open gripper
  $("belief-doubt").classList.toggle("hidden", b.source !== "unknown");
  $("belief-doubt").textContent = b.source === "unknown" ? `Not sure what the gripper holds: ${b.detail}. ` +
    "If it holds something, take it out and press Open gripper." : "";
  const study = studies.find((x) => String(x.id) === $("study").value);
  const low = s.free_mb !== null && s.free_mb !== undefined && study && s.free_mb < study.min_free_mb;
  $("storage-low").classList.toggle("hidden", !low);
  $("storage-low").textContent = low ? `Only ${s.free_mb} MB free where trials are stored; this study needs ` +
    `${study.min_free_mb} MB. No trial starts until there is room.` : "";
  $("arm").title = JSON.stringify(s.arm_state);  // the full state on hover
  const stopped = s.stopped || a.estopped;
  $("stopped-banner").classList.toggle("hidden", !stopped);
  // after a reset the arm is where it stopped: no trial starts until it is homed (a reset never moves it)
  const notReady = !stopped && a.needs_reset;
  $("not-ready-banner").classList.toggle("hidden", !notReady);
  $("not-ready-banner").textContent = notReady ? (a.needs_reset.includes("Home arm")
    ? "ARM NOT READY: it is where it stopped (a reset never moves it). Press Home arm; no trial starts until then."
    : `ARM NOT READY (${a.needs_reset}). Press Reset arm.`) : "";
  document.body.classList.toggle("stopped", !!stopped);
  const pb = s.pending_block, ph = s.pending_half;
  $("scene-box").classList.toggle("hidden", !pb && !ph);
  if (pb || ph) {
    // a pairwise half: the letter only (the console names agents elsewhere; the letter is what the participant sees)
    const who = pb ? `${pb.label} is ready for ${pb.alias}.` : `${ph.label}'s episode ${ph.episode}: ${ph.half} acts next.`;
    $("scene-text").textContent = `${who} Put every object back as in the reference ` +
      `(overlay: blend or difference), then press Reset scene` + (ph ? " (Abort trial ends the episode instead)." : ".");
    if ($("overlay").value === "off" && reference) { $("overlay").value = "blend"; }
  }
  showRequests(s.human_requests);
}

function connect() {
  if (!token) { $("no-token").classList.remove("hidden"); $("conn").textContent = "no operator token"; return; }
  const ws = new WebSocket(PL.wsUrl("/ws/operator", token));
  ws.binaryType = "blob";
  ws.onopen = () => { $("conn").textContent = "connected"; };
  ws.onmessage = async (ev) => {
    if (typeof ev.data === "string") {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { setError(`unreadable status message: ${e.message}`); return; }
      if (m.type === "status") onStatus(m); else if (m.type === "error") setError(m.error);
      return;
    }
    window.__pl.frames++;
    const b = await createImageBitmap(ev.data);
    if (bitmap) bitmap.close();
    bitmap = b; drawLive();
  };
  ws.onclose = (ev) => {
    if (ev.code === 4401) {  // a wrong token: reconnecting would not help
      $("no-token").textContent = "The operator token in this link is not valid. Open the operator link printed by pointlab act.";
      $("no-token").classList.remove("hidden"); $("conn").textContent = "not authorised"; return;
    }
    $("conn").textContent = "disconnected; reconnecting…"; setTimeout(connect, 1500);
  };
}

if (token) loadAgents().then(() => loadStudies()).catch(() => {});
connect();
