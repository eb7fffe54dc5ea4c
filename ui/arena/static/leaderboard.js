"use strict";
async function refresh() {
  const method = document.getElementById("method").value, ties = document.getElementById("ties").value;
  const r = await fetch(`/api/leaderboard?method=${method}&ties=${ties}`);
  const data = await r.json();
  const body = document.querySelector("#board tbody");
  body.innerHTML = "";
  document.getElementById("status").textContent = r.ok ? `${data.counted} of ${data.votes} votes counted` : (data.detail || "error");
  if (!r.ok) return;
  Object.entries(data.ratings).sort((a, b) => b[1].rating - a[1].rating).forEach(([name, x]) => {
    const tr = document.createElement("tr");
    [x.rank, name, x.rating.toFixed(1), `${x.ci_low.toFixed(1)} – ${x.ci_high.toFixed(1)}`, x.games].forEach((v) => {
      const td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
    });
    body.appendChild(tr);
  });
}
document.getElementById("method").addEventListener("change", refresh);
document.getElementById("ties").addEventListener("change", refresh);
refresh();
