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
      for (const v of [s.name, s.status, s.scene, s.participant_id, s.arm, s.camera, s.trials, s.lost]) tr.append(cell(v));
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
  document.getElementById("status").textContent =
    name + " " + verb + ": " + (out && out.ok ? "done" : "failed" + (out && out.error ? " (" + out.error + ")" : " (HTTP " + r.status + ")"));
}

document.getElementById("estop").addEventListener("click", async () => {
  const r = await fetch("/api/console/estop", { method: "POST", headers: auth });
  const out = r.ok ? await r.json() : null;
  document.getElementById("status").textContent = out ? "E-stop sent: " + JSON.stringify(out.stopped) : "E-stop failed: HTTP " + r.status;
});

refresh();
setInterval(refresh, 1000);
