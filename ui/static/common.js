// Helpers shared by the pages (plain JavaScript, no build step).
"use strict";

const PL = {
  // The operator token travels in the URL fragment (#token=...) so it never reaches server logs.
  fragmentParam(name) {
    const p = new URLSearchParams(location.hash.replace(/^#/, ""));
    return p.get(name);
  },
  wsUrl(path, token) {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    return `${proto}//${location.host}${path}?token=${encodeURIComponent(token)}`;
  },
  async api(method, path, token, body) {
    const opt = { method, headers: { Authorization: `Bearer ${token}` } };
    if (body !== undefined) { opt.headers["Content-Type"] = "application/json"; opt.body = JSON.stringify(body); }
    const r = await fetch(path, opt);
    const ct = r.headers.get("content-type") || "";
    const data = ct.includes("json") ? await r.json() : await r.text();
    if (!r.ok) throw new Error((data && data.detail) ? PL.detailText(data.detail) : `HTTP ${r.status}`);
    return data;
  },
  // An error's detail in words: FastAPI's 422 is a list of {loc, msg}: "reveal_low_s: Input should be
  // greater than or equal to 0; ..." rather than raw JSON.
  detailText(detail) {
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail.map((d) => {
        const where = (d && Array.isArray(d.loc) ? d.loc : []).filter((x) => x !== "body").join(".");
        return (where ? `${where}: ` : "") + (d && d.msg ? d.msg : JSON.stringify(d));
      }).join("; ");
    }
    return JSON.stringify(detail);
  },
  // Draw a JPEG frame (ImageBitmap) scaled to the canvas, then the points (original-image pixels).
  drawFrame(canvas, bitmap, points, frameSize) {
    if (!bitmap) return;
    if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
      canvas.width = bitmap.width; canvas.height = bitmap.height;
    }
    const g = canvas.getContext("2d");
    g.drawImage(bitmap, 0, 0);
    if (!points || !points.length) return;
    // Points are in the pixels of the image the agent saw; rescale if the live view differs in size.
    const sx = frameSize ? canvas.width / frameSize[0] : 1, sy = frameSize ? canvas.height / frameSize[1] : 1;
    points.forEach((p, i) => {
      // Canvas x of pixel centre u is u + 0.5 (pixel centres at integers, canvas edges at 0).
      const x = (p[0] + 0.5) * sx, y = (p[1] + 0.5) * sy;
      const r = Math.max(6, canvas.width / 60);
      const w = Math.max(2, r / 3);
      const marker = () => {
        g.beginPath(); g.arc(x, y, r, 0, 2 * Math.PI); g.stroke();
        g.beginPath(); g.moveTo(x - 2 * r, y); g.lineTo(x - r / 2, y); g.moveTo(x + r / 2, y); g.lineTo(x + 2 * r, y);
        g.moveTo(x, y - 2 * r); g.lineTo(x, y - r / 2); g.moveTo(x, y + r / 2); g.lineTo(x, y + 2 * r); g.stroke();
      };
      // a white halo under the colour: a red marker on a red block stays visible
      g.lineWidth = w + 4; g.strokeStyle = "#fff"; marker();
      g.lineWidth = w; g.strokeStyle = i === 0 ? "#ff2d55" : "#ffcc00"; marker();
    });
  },
  el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
    return e;
  },
  fmt(x, digits = 1) { return x === null || x === undefined ? "–" : Number(x).toFixed(digits); },
  // A short tone: the operator is asked to click (they may be looking at the arm). (The participant
  // page loads this file too: it names no agent, so the blinding test reads it as well.)
  beep() {
    try {
      const ac = new (window.AudioContext || window.webkitAudioContext)();
      const o = ac.createOscillator(), g = ac.createGain();
      o.frequency.value = 880; g.gain.value = 0.15; o.connect(g); g.connect(ac.destination);
      o.start(); o.stop(ac.currentTime + 0.35);
    } catch (e) {
      // no audio device or autoplay blocked: the visible alert stands
    }
  },
};
