// Leaderboard: Bradley-Terry and Elo side by side, votes and battles per model, win-fraction matrix.
"use strict";
const fmtCi = (r) => (r && r.ci_low !== null ? `${r.ci_low.toFixed(0)} – ${r.ci_high.toFixed(0)}` : null);

async function refresh() {
  const ties = document.getElementById("ties").value;
  const r = await fetch(`/api/leaderboard?ties=${ties}`);
  const data = await r.json();
  const status = document.getElementById("status");
  if (!r.ok) { status.textContent = data.detail || "error"; return; }
  status.textContent = `${data.counted} of ${data.votes} votes counted`;
  document.getElementById("few-n").textContent = data.few_votes;
  const body = document.querySelector("#board tbody");
  body.innerHTML = "";
  const few = () => PL.el("span", { class: "few" }, `fewer than ${data.few_votes} votes`);
  data.models.forEach((m) => {
    const cells = [
      m.few_votes || !m.bt ? "–" : m.bt.rank, m.model,
      m.bt ? m.bt.rating.toFixed(0) : "–", m.few_votes ? few() : (fmtCi(m.bt) || "–"),
      m.elo ? m.elo.rating.toFixed(0) : "–", m.few_votes ? few() : (fmtCi(m.elo) || "–"),
      m.votes, m.battles];
    const tr = PL.el("tr", {});
    cells.forEach((c, i) => tr.appendChild(PL.el("td", { class: [2, 4, 6, 7].includes(i) ? "num" : "" }, c)));
    body.appendChild(tr);
  });
  const t = document.getElementById("matrix");
  t.innerHTML = "";
  const names = data.matrix.models;
  const head = PL.el("tr", {}, PL.el("th", {}, ""));
  names.forEach((n) => head.appendChild(PL.el("th", {}, n)));
  t.appendChild(head);
  names.forEach((row, i) => {
    const tr = PL.el("tr", {}, PL.el("th", {}, row));
    names.forEach((_, j) => {
      const f = data.matrix.win_fraction[i][j], g = data.matrix.games[i][j];
      const td = PL.el("td", { class: i === j ? "self" : "" });
      if (i !== j && f !== null) {
        td.append(`${Math.round(100 * f)}%`, PL.el("br", {}), PL.el("small", { class: "muted" }, `${g}`));
        td.style.background = `rgba(${f < 0.5 ? "207,34,46" : "26,127,55"}, ${Math.abs(f - 0.5) * 0.8})`;
      } else if (i !== j) td.textContent = "–";
      tr.appendChild(td);
    });
    t.appendChild(tr);
  });
}
document.getElementById("ties").addEventListener("change", refresh);
refresh();
