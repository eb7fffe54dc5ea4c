// Results page: per-agent success with Wilson 95% interval beside the automatic check, aborted trials
// apart, failures by stage, SUS, the charts, the trial log with clips, CSV download.
"use strict";

const token = PL.fragmentParam("token") || "";
const $ = (id) => document.getElementById(id);
const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(0)}%`);

async function call(method, path) {
  try { $("error").textContent = ""; return await PL.api(method, path, token); }
  catch (e) { $("error").textContent = e.message; throw e; }
}

async function blobUrl(path) {
  const r = await fetch(path, { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
  return r.ok ? URL.createObjectURL(await r.blob()) : null;
}

async function loadStudies() {
  const studies = await call("GET", "/api/studies");
  $("study").replaceChildren(...studies.map((s) => PL.el("option", { value: String(s.id) }, `#${s.id} ${s.name || s.scene || ""} (${s.agents.join(", ")})`)));
  const want = PL.fragmentParam("study");
  if (want && studies.some((s) => String(s.id) === want)) $("study").value = want;
  else if (studies.length) $("study").value = String(studies[studies.length - 1].id);
  await load();
}

function stages(m) { return Object.entries(m || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "–"; }
function robotText(t) {
  const why = t.refusal ? ` (${t.refusal.code})` : t.robot_error ? ` (${t.robot_error.type})` : "";
  return t.robot_outcome + why;
}

// The clip streams (and seeks) from its signed, expiring URL: a <video> cannot send the bearer header.
function clipCell(t) {
  if (!t.clip_url) return PL.el("td", {}, "–");
  return PL.el("td", {}, PL.el("video", { controls: "", preload: "metadata", width: "200", class: "clip", src: t.clip_url }));
}

let loading = 0;  // the latest load: an older, slower answer (another study) is dropped, not drawn

async function load() {
  const sid = $("study").value;
  if (!sid) return;
  const mine = ++loading;
  $("study-label").textContent = `loading study #${sid}…`;
  const r = await call("GET", `/api/results?study_id=${sid}`);
  if (mine !== loading) return;
  const per = r.study.mode === "pairwise" ? `episode${r.study.trials_per_agent === 1 ? "" : "s"} per participant (pairwise, ${r.study.pair_sampling} pairs)`
    : `trial${r.study.trials_per_agent === 1 ? "" : "s"} per agent`;
  $("study-label").textContent = `study #${r.study.id} · ${r.study.name || r.study.scene} · ${r.study.trials_per_agent} ${per}`;
  $("agents").replaceChildren(...r.agents.map((a) => PL.el("tr", { "data-agent": a.agent },
    PL.el("td", {}, a.agent), PL.el("td", {}, a.n_judged), PL.el("td", {}, a.n_succeeded),
    PL.el("td", { class: "rate" }, pct(a.success_rate)),
    PL.el("td", { class: "ci" }, a.ci95 ? `${pct(a.ci95[0])} – ${pct(a.ci95[1])}` : "–"),
    PL.el("td", { class: "aborted" }, a.n_aborted),
    PL.el("td", { class: "auto" }, pct(a.auto_success_rate)),
    PL.el("td", { class: "agreement" }, a.agreement === null ? "–" : `${pct(a.agreement)} (κ ${a.kappa === null ? "undefined" : PL.fmt(a.kappa, 2)})`),
    PL.el("td", {}, pct(a.sim_success_rate)), PL.el("td", { class: "stages" }, stages(a.failure_stages)),
    PL.el("td", { class: "short" }, a.n_short_blocks), PL.el("td", { class: "late" }, pct(a.late_share)),
    PL.el("td", { class: "sus" }, PL.fmt(a.mean_sus, 1)), PL.el("td", {}, a.n_surveys))));
  const short = (r.blocks || []).filter((b) => b.short);
  $("short-section").classList.toggle("hidden", !short.length);
  $("short-blocks").replaceChildren(...short.map((b) => PL.el("tr", { class: "short-block" },
    PL.el("td", {}, b.participant), PL.el("td", {}, `${b.alias} (${b.block})`), PL.el("td", {}, b.agent),
    PL.el("td", {}, b.kept), PL.el("td", {}, b.aborted), PL.el("td", {}, b.trials_per_agent))));
  $("trials").replaceChildren(...r.trials.map((t) => PL.el("tr", { "data-outcome": t.outcome || "", "data-id": String(t.id) },
    PL.el("td", { class: "number" }, t.number ?? ""),
    PL.el("td", {}, t.participant ?? t.participant_id), PL.el("td", {}, t.block ?? ""),
    PL.el("td", {}, t.agent), PL.el("td", {}, t.action), PL.el("td", {}, t.instruction),
    PL.el("td", {}, (t.points_px || []).map((p) => `(${p[0].toFixed(0)}, ${p[1].toFixed(0)})`).join(" ")),
    PL.el("td", {}, robotText(t)), PL.el("td", {}, t.outcome || "–"), PL.el("td", {}, t.failure_stage || "–"),
    PL.el("td", {}, t.auto_check ? (t.auto_check.success === null ? "?" : t.auto_check.success ? "yes" : "no") : "–"),
    PL.el("td", {}, t.judgement || "–"), clipCell(t))));
  renderPairwise(r.pairwise || null);
  $("block-head").textContent = r.pairwise ? "Episode" : "Block";  // a pairwise half's block is its episode
  // a pairwise study has no SUS per agent (no agent blocks): its chart is the ratings and progress
  const kinds = r.pairwise ? ["success", "pairwise"] : ["success", "sus"];
  if (!r.pairwise) $("plot-pairwise").classList.add("hidden");
  else $("plot-sus").classList.add("hidden");
  for (const kind of kinds) {
    const url = await blobUrl(`/api/results/plot.svg?study_id=${sid}&kind=${kind}`);
    if (mine !== loading) return;
    $(`plot-${kind}`).classList.toggle("hidden", !url);  // no study or no chart: no broken image
    if (url) $(`plot-${kind}`).src = url;
  }
}

// A pairwise study: ratings with intervals, the win matrix, the task buckets and the episode log.
function renderPairwise(pw) {
  $("pairwise-section").classList.toggle("hidden", !pw);
  if (!pw) return;
  const n = pw.episodes;
  $("pairwise-counts").textContent = `${n.compared} compared episode${n.compared === 1 ? "" : "s"}, ${n.void} void, ${n.waiting} waiting for a comparison.`
    + (pw.short_participants && pw.short_participants.length ? ` Short (repeats ran out): ${pw.short_participants.join(", ")}.` : "");
  const ratings = pw.ratings.ratings;
  const agents = Object.keys(ratings).sort((a, b) => ratings[b].rating - ratings[a].rating);
  const prog = (a) => pw.progress[a] || {};
  $("ratings").replaceChildren(...agents.map((a, i) => PL.el("tr", { "data-agent": a },
    PL.el("td", {}, String(i + 1)), PL.el("td", {}, a),
    PL.el("td", { class: "rating" }, PL.fmt(ratings[a].rating, 0) + (ratings[a].bound ? ` (${ratings[a].bound}: unbounded)` : "")
      + (ratings[a].few_episodes ? " · few episodes" : "")),
    PL.el("td", { class: "rating-ci" }, `${PL.fmt(ratings[a].ci_low, 0)} – ${PL.fmt(ratings[a].ci_high, 0)}`),
    PL.el("td", { class: "episodes" }, String(ratings[a].episodes)),
    PL.el("td", { class: "progress" }, PL.fmt(prog(a).mean, 1)),
    PL.el("td", { class: "progress-ci" }, prog(a).ci95 ? `${PL.fmt(prog(a).ci95[0], 1)} – ${PL.fmt(prog(a).ci95[1], 1)}` : "–"))));
  const names = Object.keys(pw.win_matrix);
  const head = PL.el("tr", {}, PL.el("th", {}, ""), ...names.map((b) => PL.el("th", {}, b)));
  $("win-matrix").replaceChildren(head, ...names.map((a) => PL.el("tr", { "data-agent": a }, PL.el("th", {}, a),
    ...names.map((b) => { const c = pw.win_matrix[a][b]; return PL.el("td", { "data-against": b }, c ? `${c.wins} – ${c.losses} – ${c.ties}` : "·"); }))));
  const bk = pw.bucketed;
  const buckets = bk ? Object.keys(bk.buckets) : [];
  $("bucket-head").textContent = buckets.length ? `P(success): ${buckets.join(", ")}` : "P(success) per bucket";
  $("buckets").replaceChildren(...(bk ? Object.entries(bk.agents) : []).map(([a, v]) => PL.el("tr", { "data-agent": a },
    PL.el("td", {}, a), PL.el("td", {}, PL.fmt(v.theta, 2)), PL.el("td", {}, `${PL.fmt(v.ci_low, 2)} – ${PL.fmt(v.ci_high, 2)}`),
    PL.el("td", {}, buckets.map((b) => `${b} ${pct(v.success[b])}`).join(", ")))));
  $("episodes").replaceChildren(...pw.log.map((e) => PL.el("tr", { "data-void": String(e.void) },
    PL.el("td", {}, e.participant ?? ""), PL.el("td", {}, e.number), PL.el("td", {}, e.instruction), PL.el("td", {}, e.category),
    PL.el("td", {}, e.agent_a), PL.el("td", {}, e.agent_b),
    PL.el("td", {}, e.void ? "void" : e.winner ?? "–"), PL.el("td", {}, e.progress_a ?? "–"), PL.el("td", {}, e.progress_b ?? "–"),
    PL.el("td", {}, e.reason || ""))));
}

$("study").addEventListener("change", load);
$("refresh").addEventListener("click", load);
// a download needs the bearer header, so it is fetched and handed to the browser as a blob
async function download(path, name) {
  const res = await fetch(path, { headers: { Authorization: `Bearer ${token}` } });
  if (!res.ok) { $("error").textContent = `CSV: HTTP ${res.status}`; return; }
  const url = URL.createObjectURL(await res.blob());
  const a = PL.el("a", { href: url, download: name });
  document.body.append(a); a.click(); a.remove(); URL.revokeObjectURL(url);
}
$("csv").addEventListener("click", () => { const sid = $("study").value; download(`/api/results.csv?study_id=${sid}`, `study-${sid}-trials.csv`); });
$("episodes-csv").addEventListener("click", () => { const sid = $("study").value; download(`/api/results/episodes.csv?study_id=${sid}`, `study-${sid}-episodes.csv`); });
if (!token) $("error").textContent = "This page needs the operator link (…/results#token=…) from the console.";
else loadStudies().catch(() => {});
