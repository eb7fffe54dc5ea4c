// PinpointQA human localization study (App. D.1): reveal frames on Start, pick a frame, click the
// object, save. Coordinates are normalized by the displayed image's size, so they do not depend on
// the screen; time runs from Start to Save.
"use strict";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
let samples = [], pos = 0, frameIndex = null, click = null, startedAt = null, setting = "gt";

async function load() {
  const q = params.get("setting") ? `?setting=${encodeURIComponent(params.get("setting"))}` : "";
  const r = await fetch(`/api/samples${q}`);
  if (!r.ok) { $("title").textContent = `Cannot load the study (${r.status})`; return; }
  const data = await r.json();
  samples = data.samples; setting = data.setting;
  $("participant").value = params.get("participant") || localStorage.getItem("ppqa-participant") || "";
  show();
}

function show() {
  if (pos >= samples.length) { $("work").classList.add("hidden"); $("done").classList.remove("hidden");
    $("title").textContent = "Done"; $("question").textContent = ""; $("start").disabled = true;
    $("guidance").classList.add("hidden"); $("instruction").textContent = ""; return; }
  const s = samples[pos];
  $("progress").textContent = `sample ${pos + 1} of ${samples.length}`;
  $("title").textContent = s.title;
  $("question").textContent = s.question;
  $("instruction").textContent = s.instruction;
  $("guidance").textContent = s.guidance;
  $("guidance").classList.toggle("hidden", !s.guidance);
  $("work").classList.add("hidden");
  $("start").disabled = false;
  frameIndex = null; click = null; startedAt = null;
  $("save").disabled = true; $("status").textContent = "";
  $("marker").classList.add("hidden"); $("frame").removeAttribute("src");
}

function start() {
  const s = samples[pos];
  startedAt = performance.now();
  $("start").disabled = true;
  const thumbs = $("thumbs"); thumbs.innerHTML = "";
  s.frames.forEach((url, k) => {
    const img = document.createElement("img");
    img.src = url; img.alt = `frame ${k}`; img.dataset.index = String(k); img.id = `thumb-${k}`;
    img.addEventListener("click", () => selectFrame(k));
    thumbs.appendChild(img);
  });
  $("work").classList.remove("hidden");
}

function selectFrame(k) {
  frameIndex = k; click = null;
  document.querySelectorAll("#thumbs img").forEach((el) => el.classList.toggle("selected", Number(el.dataset.index) === k));
  $("frame").src = samples[pos].frames[k];
  $("marker").classList.add("hidden");
  $("save").disabled = true;
}

function onFrameClick(ev) {
  if (frameIndex === null) return;
  const rect = $("frame").getBoundingClientRect();
  const x = (ev.clientX - rect.left) / rect.width, y = (ev.clientY - rect.top) / rect.height;
  if (x < 0 || x > 1 || y < 0 || y > 1) return;
  click = { x, y };
  const m = $("marker");
  m.style.left = `${x * 100}%`; m.style.top = `${y * 100}%`;
  m.classList.remove("hidden");
  $("save").disabled = false;
}

async function save() {
  if (frameIndex === null || click === null) return;
  const participant = $("participant").value.trim() || "anonymous";
  localStorage.setItem("ppqa-participant", participant);
  const body = { id: samples[pos].id, participant, setting, frame_index: frameIndex, x: click.x, y: click.y,
                 elapsed_s: (performance.now() - startedAt) / 1000 };
  $("save").disabled = true;
  const r = await fetch("/api/responses", { method: "POST", headers: { "content-type": "application/json" },
                                            body: JSON.stringify(body) });
  if (!r.ok) { $("status").textContent = `Not saved (${r.status}); try again.`; $("save").disabled = false; return; }
  pos += 1; show();
}

$("start").addEventListener("click", start);
$("frame").addEventListener("click", onFrameClick);
$("save").addEventListener("click", save);
load();
