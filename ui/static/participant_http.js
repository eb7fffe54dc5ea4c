// The participant page's transport to a study server (`pointlab act server`, docs/stations.md): the
// JSON API polled once a second, the station's live view polled a few times a second, every action a
// POST. It hands participant.js the same messages the websocket of `pointlab act` sends, so both
// are one page.
"use strict";

window.PLHttpTransport = function (token, on) {
  const base = `/api/p/${encodeURIComponent(token)}`;
  let state = null, wantBlock = false, blockInFlight = false, gone = false;

  function detail(res) {
    const d = res.data && res.data.detail;
    return d ? PL.detailText(d) : `the server answered ${res.status}`;
  }

  async function post(path, body) {
    try {
      const r = await fetch(base + path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body || {}),
      });
      let data = null;
      try { data = await r.json(); } catch (e) { /* an answer that is not JSON: its status says it */ }
      return { ok: r.ok, status: r.status, data };
    } catch (e) {
      return { ok: false, status: 0, data: { detail: "The study server could not be reached; try again." } };
    }
  }

  async function poll() {
    if (gone) return;
    try {
      const r = await fetch(base, { cache: "no-store" });
      if (r.status === 404) { gone = true; on.fatal("This invite link is not valid. Ask the operator for a new one."); return; }
      if (!r.ok) throw new Error(String(r.status));
      state = await r.json();
      on.message(state);
      // Start pressed while waiting in line: the block starts as soon as a station is given
      if (wantBlock && state.step.kind === "setup" && state.has_station && !blockInFlight) startBlock();
      if (state.step.kind !== "setup") wantBlock = false;
    } catch (e) {
      on.status("Disconnected; reconnecting…");
    }
  }

  async function startBlock() {
    blockInFlight = true;
    const res = await post("/block");
    blockInFlight = false;
    if (res.ok) { wantBlock = false; on.message({ type: "block_started", block: res.data.block }); }
    else if (res.status === 409) on.message({ type: "waiting_for_station", detail: detail(res) });  // still wanted
    else { wantBlock = false; on.message({ type: "error", error: detail(res) }); }
    poll();
  }

  async function instruction(text) {
    if (!text || !text.trim()) { on.message({ type: "error", error: "type an instruction first" }); return; }
    if (state && state.mode === "pairwise") {  // one request runs both halves: A, then B
      on.message({ type: "trial_started", alias: "A, then B," });
      const res = await post("/episode", { instruction: text });
      on.message(res.ok ? { type: "episode_result", ...res.data } : { type: "error", error: detail(res) });
      poll();
      return;
    }
    on.message({ type: "trial_started", alias: state && state.step.alias });
    const res = await post("/trial", { instruction: text });
    on.message(res.ok ? { type: "trial_result", ...res.data } : { type: "error", error: detail(res) });
    poll();
  }

  async function simple(path, body) {
    const res = await post(path, body);
    on.message(res.ok ? res.data : { type: "error", error: detail(res) });
    poll();
  }

  async function liveLoop() {
    if (gone) return;
    if (state && state.has_station) {
      try {
        const r = await fetch(base + "/frame", { cache: "no-store" });
        if (r.ok) await on.frame(await r.blob());
      } catch (e) { /* the next one */ }
    }
    setTimeout(liveLoop, 250);
  }

  (async function pollLoop() { await poll(); if (!gone) setTimeout(pollLoop, 1000); })();
  liveLoop();

  return {
    send(m) {
      if (m.type === "start_block") { wantBlock = true; if (!blockInFlight) startBlock(); }
      else if (m.type === "instruction") instruction(m.text);
      else if (m.type === "judge") simple("/judge", { trial_id: m.trial_id, judgement: m.judgement });
      else if (m.type === "sus") simple("/sus", { block: m.block, responses: m.responses });
      else if (m.type === "compare") {
        const { type, ...body } = m;
        simple("/compare", body);
      }
    },
    async trialFrame(trialId, which) {
      const r = await fetch(`${base}/trials/${encodeURIComponent(trialId)}/frame?which=${which}`, { cache: "no-store" });
      return r.ok ? await r.blob() : null;
    },
  };
};
