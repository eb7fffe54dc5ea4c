// The study server's station console: polls /api/console with the operator token from the URL
// fragment (#token=...), which never reaches a server log.
"use strict";
const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
const auth = { Authorization: "Bearer " + token };

function cell(text) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  return td;
}

async function refresh() {
  try {
    const r = await fetch("/api/console", { headers: auth });
    if (!r.ok) {
      document.getElementById("status").textContent = "Console: HTTP " + r.status + " (is the token in the URL?)";
      return;
    }
    const c = await r.json();
    const body = document.querySelector("#stations tbody");
    body.replaceChildren();
    for (const s of c.stations) {
      const tr = document.createElement("tr");
      tr.dataset.station = s.name;
      // an e-stopped station stays "idle" in the dispatch: say what it waits for
      const status = s.stopped ? s.status + " \u00b7 STOPPED (Reset, then Home)" : s.needs_home ? s.status + " \u00b7 waiting for Home" : s.status;
      for (const v of [s.name, status, s.scene, s.participant_id, s.arm, s.camera, s.trials, s.lost]) tr.append(cell(v));
      if (s.stopped) tr.classList.add("stopped");
      const actions = document.createElement("td");
      // after an e-stop: Reset (never moves the arm), then Home (trials are allowed again)
      // Release: its participant left mid-block, the station goes to the next in line
      for (const verb of ["reset", "home", "release"]) {
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = { reset: "Reset", home: "Home", release: "Release" }[verb];
        b.disabled = verb === "release" ? s.participant_id === null : s.status === "offline";
        b.addEventListener("click", () => command(s.name, verb));
        actions.append(b);
      }
      tr.append(actions);
      body.append(tr);
    }
    document.getElementById("queue").textContent = c.queue.length ? "participants " + c.queue.join(", ") : "nobody waiting";
    const rec = c.records;
    document.getElementById("records").textContent =
      rec.records + " trials stored, " + rec.lost_trials + " lost with their station (station_lost), " +
      rec.refused + " refused; " + rec.duplicates + " second copies dropped (each trial comes as its reply and again from the station's journal)";
    document.getElementById("status").textContent = c.stations.length + " station(s)";
  } catch (e) {
    document.getElementById("status").textContent = "Console: the server does not answer";
  }
}

async function command(name, verb) {
  const r = await fetch("/api/console/stations/" + encodeURIComponent(name) + "/" + verb, { method: "POST", headers: auth });
  const out = r.ok ? await r.json() : null;
  document.getElementById("notice").textContent =
    name + " " + verb + ": " + (out && out.ok ? "done" : "failed" + (out && out.error ? " (" + out.error + ")" : " (HTTP " + r.status + ")"));
}

document.getElementById("estop").addEventListener("click", async () => {
  const r = await fetch("/api/console/estop", { method: "POST", headers: auth });
  const out = r.ok ? await r.json() : null;
  document.getElementById("notice").textContent = out
    ? "E-stop: " + Object.entries(out.stopped).map(([n, ok]) => n + (ok ? " stopped" : " DID NOT ANSWER")).join(", ")
    : "E-stop failed: HTTP " + r.status;
});

// -- the human reference: the open requests of every station, one at a time ----------------------
let currentRequest = null;
const answered = new Set();  // request ids already answered here (the next poll may still list them)
window.__pl = { alerts: 0 };

function hideHuman() { currentRequest = null; document.getElementById("human-box").classList.add("hidden"); document.title = "pointlab: stations"; }

async function refreshHuman() {
  let reqs = [];
  try {
    const r = await fetch("/api/console/human", { headers: auth });
    if (r.ok) reqs = (await r.json()).filter((x) => !answered.has(x.station + "/" + x.request_id));
  } catch (e) { return; }
  if (!reqs.length) { hideHuman(); return; }
  if (currentRequest && reqs.some((x) => x.request_id === currentRequest.request_id)) return;
  const q = reqs[0];
  currentRequest = q;
  document.getElementById("human-img").src = "data:image/jpeg;base64," + q.jpeg_b64;
  document.getElementById("human-title").textContent = "Human reference: click where the robot should " + (q.action || "act").toUpperCase();
  document.getElementById("human-box").classList.remove("hidden");
  document.getElementById("human-box").scrollIntoView({ block: "start" });  // it may be below the fold
  PL.beep();  // a click is wanted: audibly too, as act's operator page
  document.getElementById("human-instruction").textContent = "\u201c" + q.instruction + "\u201d";
  document.getElementById("human-station").textContent = "station " + q.station;
  window.__pl.alerts++;
  document.title = "CLICK · pointlab: stations";
}

async function reply(q, verb, body) {
  answered.add(q.station + "/" + q.request_id);
  hideHuman();
  const r = await fetch("/api/console/human/" + encodeURIComponent(q.station) + "/" + encodeURIComponent(q.request_id) + "/" + verb, {
    method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: body ? JSON.stringify(body) : null,
  });
  if (!r.ok) {
    const d = (await r.json().catch(() => ({}))).detail;
    document.getElementById("notice").textContent = "Human reference: " + (d ? PL.detailText(d) : "HTTP " + r.status);
  }
}

// A click on the displayed image -> original-image pixels: the image spans [-0.5, W - 0.5] in u
// (pixel centres at integers), so u = x / displayed_width * W - 0.5 (as on the operator page of act).
document.getElementById("human-img").addEventListener("click", (ev) => {
  if (!currentRequest) return;
  const img = ev.currentTarget, r = img.getBoundingClientRect();
  const x = ev.clientX - r.left - img.clientLeft, y = ev.clientY - r.top - img.clientTop;
  reply(currentRequest, "answer", { u: x / img.clientWidth * currentRequest.width - 0.5, v: y / img.clientHeight * currentRequest.height - 0.5 });
});
document.getElementById("human-decline").addEventListener("click", () => { if (currentRequest) reply(currentRequest, "decline"); });

// -- a new study and its invitation links -------------------------------------------------------
// in a pairwise study the count is each participant's episodes (two agents act in every episode)
document.getElementById("study-mode").addEventListener("change", () => {
  const pairwise = document.getElementById("study-mode").value === "pairwise";
  document.getElementById("study-trials-label").textContent = pairwise ? "Episodes per participant" : "Trials per agent";
  document.getElementById("study-pair-sampling").disabled = !pairwise;
});
document.getElementById("study-pair-sampling").disabled = true;
document.getElementById("study-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = {
    agents: document.getElementById("study-agents").value.split(",").map((a) => a.trim()).filter(Boolean),
    trials_per_agent: Number(document.getElementById("study-trials").value),
    participants: Number(document.getElementById("study-participants").value),
    scene: document.getElementById("study-scene").value.trim() || "tabletop",
    reveal_low_s: Number(document.getElementById("study-reveal-low").value),
    reveal_high_s: Number(document.getElementById("study-reveal-high").value),
    mode: document.getElementById("study-mode").value,
    pair_sampling: document.getElementById("study-pair-sampling").value,
  };
  const r = await fetch("/api/studies", { method: "POST", headers: { ...auth, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const out = await r.json().catch(() => ({}));
  if (!r.ok) {
    document.getElementById("notice").textContent = "Study not created: " + (out.detail ? PL.detailText(out.detail) : "HTTP " + r.status);
    return;
  }
  await showStudies();
  document.getElementById("notice").textContent = "Study " + out.study_id + " created: " + out.tokens.length + " invitation link(s) below";
});

// Every study with its invitation links (kept by the server: a reload loses none).
async function showStudies() {
  const r = await fetch("/api/studies", { headers: auth });
  if (!r.ok) return;
  const list = document.getElementById("invites");
  list.replaceChildren();
  for (const st of await r.json()) {
    const li = document.createElement("li");
    li.textContent = "Study " + st.study_id + " (" + (st.agents || []).join(", ") + "; scene " + st.scene + "): ";
    const links = document.createElement("ul");
    for (const p of st.participants) {
      const a = document.createElement("a");
      a.href = location.origin + "/p/" + encodeURIComponent(p.token);
      a.textContent = a.href;
      const item = document.createElement("li");
      item.append((p.label || "participant") + " ", a);
      links.append(item);
    }
    li.append(links);
    list.append(li);
  }
}

refresh();
setInterval(refresh, 1000);
showStudies();
refreshHuman();
setInterval(refreshHuman, 1000);
