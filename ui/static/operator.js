// Operator console: studies, invitations, live queue, human reference clicks, e-stop.
"use strict";

const token = PL.fragmentParam("token") || "";
const $ = (id) => document.getElementById(id);
const canvas = $("live");
let bitmap = null, currentRequest = null;
window.__pl = { frames: 0 };

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
  const studies = await call("GET", "/api/studies");
  const sel = $("study");
  sel.replaceChildren(...studies.map((s) => PL.el("option", { value: String(s.id) },
    `#${s.id} ${s.scene || ""} (${s.agents.join(", ")}; ${s.trials_per_agent}/agent)`)));
  if (selectId) sel.value = String(selectId);
  else if (studies.length) sel.value = String(studies[studies.length - 1].id);
  await loadParticipants();
}

async function loadParticipants() {
  const sid = $("study").value;
  $("results-link").href = `/results#token=${encodeURIComponent(token)}` + (sid ? `&study=${sid}` : "");
  if (!sid) { $("participants").replaceChildren(); return; }
  const ps = await call("GET", `/api/studies/${sid}/participants`);
  $("participants").replaceChildren(...ps.map((p) => PL.el("tr", {},
    PL.el("td", {}, p.label), PL.el("td", {}, p.agent_order.join(" → ")),
    PL.el("td", {}, PL.el("a", { href: p.url, target: "_blank", class: "invite-link" }, PL.el("code", { class: "link" }, p.url))))));
}

$("study-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const agents = [...document.querySelectorAll("#agents input:checked")].map((c) => c.value);
  const s = await call("POST", "/api/studies", { agents, trials_per_agent: Number($("tpa").value), scene: $("scene").value });
  await loadStudies(s.id);
});
$("study").addEventListener("change", loadParticipants);
$("invite").addEventListener("click", async () => {
  const sid = $("study").value;
  if (!sid) { setError("create a study first"); return; }
  await call("POST", `/api/studies/${sid}/participants`, {});
  await loadParticipants();
});
$("estop").addEventListener("click", () => call("POST", "/api/arm/stop"));
$("reset").addEventListener("click", () => call("POST", "/api/arm/reset"));
$("release").addEventListener("click", () => call("POST", "/api/arm/release").catch(() => {}));

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
  $("human-box").classList.add("hidden");
  await call("POST", `/api/human-requests/${req.request_id}/answer`, { u, v });
});

async function showRequests(reqs) {
  if (!reqs.length) { currentRequest = null; $("human-box").classList.add("hidden"); return; }
  if (currentRequest && reqs.some((r) => r.request_id === currentRequest.request_id)) return;
  const r = reqs[0];
  $("human-img").src = `data:image/jpeg;base64,${(await call("GET", "/api/human-requests")).find((x) => x.request_id === r.request_id)?.jpeg_b64 || ""}`;
  $("human-instruction").textContent = `“${r.instruction}”`;
  currentRequest = r;
  $("human-box").classList.remove("hidden");
}

function onStatus(s) {
  const c = s.current;
  $("current").textContent = c ? `${c.participant_label} · ${c.alias} = ${c.agent} · ${c.action}: “${c.instruction}”` : "none";
  $("queue").replaceChildren(...s.queue.map((q) => PL.el("li", {}, `${q.label} (study #${q.study_id})` + (q.position === 0 ? " — in control " : " "),
    s.queue.length > 1 ? PL.el("button", { type: "button", onclick: () => call("POST", `/api/queue/${q.participant_id}/to-back`) }, "move to back") : "")));
  const a = s.arm_state || {};
  const tcp = a.tcp && a.tcp.position_m ? a.tcp.position_m.map((c) => (1000 * c).toFixed(0)).join(", ") + " mm" : "?";
  $("arm").textContent = (s.stopped ? "STOPPED · " : "") + `holding: ${s.holding} · TCP ${tcp}` +
    (a.fault ? ` · fault: ${a.fault}` : "") + (a.error_code ? ` · error ${a.error_code}` : "");
  $("arm").title = JSON.stringify(s.arm_state);  // the full state on hover
  showRequests(s.human_requests);
}

function connect() {
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
    bitmap = b; PL.drawFrame(canvas, bitmap);
  };
  ws.onclose = () => { $("conn").textContent = "disconnected; reconnecting…"; setTimeout(connect, 1500); };
}

loadAgents().then(() => loadStudies()).catch(() => {});
connect();
