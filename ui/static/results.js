// Results page: per-agent success with Wilson 95% interval, mean SUS, trial log, CSV download.
"use strict";

const token = PL.fragmentParam("token") || "";
const $ = (id) => document.getElementById(id);
const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(0)}%`);

async function call(method, path) {
  try { $("error").textContent = ""; return await PL.api(method, path, token); }
  catch (e) { $("error").textContent = e.message; throw e; }
}

async function loadStudies() {
  const studies = await call("GET", "/api/studies");
  $("study").replaceChildren(...studies.map((s) => PL.el("option", { value: String(s.id) }, `#${s.id} ${s.scene || ""} (${s.agents.join(", ")})`)));
  const want = PL.fragmentParam("study");
  if (want && studies.some((s) => String(s.id) === want)) $("study").value = want;
  else if (studies.length) $("study").value = String(studies[studies.length - 1].id);
  await load();
}

async function load() {
  const sid = $("study").value;
  if (!sid) return;
  const r = await call("GET", `/api/results?study_id=${sid}`);
  $("study-label").textContent = `study #${r.study.id} · ${r.study.scene} · ${r.study.trials_per_agent} trials per agent`;
  $("agents").replaceChildren(...r.agents.map((a) => PL.el("tr", { "data-agent": a.agent },
    PL.el("td", {}, a.agent), PL.el("td", {}, a.n_judged), PL.el("td", {}, a.n_succeeded),
    PL.el("td", { class: "rate" }, pct(a.success_rate)),
    PL.el("td", { class: "ci" }, a.ci95 ? `${pct(a.ci95[0])} – ${pct(a.ci95[1])}` : "–"),
    PL.el("td", {}, pct(a.sim_success_rate)), PL.el("td", { class: "sus" }, PL.fmt(a.mean_sus, 1)), PL.el("td", {}, a.n_surveys))));
  $("trials").replaceChildren(...r.trials.map((t) => PL.el("tr", {},
    PL.el("td", {}, t.id), PL.el("td", {}, t.participant ?? t.participant_id), PL.el("td", {}, t.block ?? ""),
    PL.el("td", {}, t.agent), PL.el("td", {}, t.action), PL.el("td", {}, t.instruction),
    PL.el("td", {}, (t.points_px || []).map((p) => `(${p[0].toFixed(0)}, ${p[1].toFixed(0)})`).join(" ")),
    PL.el("td", {}, t.robot_outcome + (t.target && t.target.reason ? ` (${t.target.reason})` : "")),
    PL.el("td", {}, t.sim_success === null ? "–" : t.sim_success ? "yes" : "no"), PL.el("td", {}, t.judgement || "–"))));
}

$("study").addEventListener("change", load);
$("refresh").addEventListener("click", load);
$("csv").addEventListener("click", async () => {
  const sid = $("study").value;
  const res = await fetch(`/api/results.csv?study_id=${sid}`, { headers: { Authorization: `Bearer ${token}` } });
  if (!res.ok) { $("error").textContent = `CSV: HTTP ${res.status}`; return; }
  const url = URL.createObjectURL(await res.blob());
  const a = PL.el("a", { href: url, download: `study-${sid}-trials.csv` });
  document.body.append(a); a.click(); a.remove(); URL.revokeObjectURL(url);
});
loadStudies().catch(() => {});
