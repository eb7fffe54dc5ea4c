"""``pointlab perf harness``: what running requests side by side buys, and what the harness itself costs.

The model is ``pointlab sim model-server --latency-s L`` in its own process (a remote model: its
work is not on the harness's CPU), answering every request after ``L`` seconds spent asleep. The same
synthetic Point-Bench items are run twice through ``bench pointing``'s runner (``run_pointing``:
request building and image encoding, the openai client, parsing, the answer journal, scoring) into
fresh run folders:

- **serial**: one request in flight;
- **concurrent**: ``concurrency`` requests in flight (target: at least 8x the serial rate at 16).

The harness's own time per item is the CPU time of this process during a run divided by the items
(target: < 5 ms); beside it, the serial run's wall time per item beyond ``L`` (the server's handling
and the loopback included).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

__all__ = ["perf_harness"]


def _items(folder: Path, n: int, side_px: int) -> list:
    from .dataset import BenchItem

    img = folder / "img.png"
    yy, xx = np.mgrid[0:side_px, 0:side_px] * (255 // max(1, side_px - 1))
    Image.fromarray(np.stack([xx, yy, (xx + yy) // 2], axis=2).astype(np.uint8)).save(img)
    m = np.zeros((side_px, side_px), np.uint8)
    m[: side_px // 2, : side_px // 2] = 255  # the scripted answer [10, 10] is inside
    Image.fromarray(m).save(folder / "mask.png")
    return [
        BenchItem(f"i{k:05d}", img, f"Point to thing {k}.", "spatial", side_px, side_px, folder / "mask.png")
        for k in range(n)
    ]


class _ModelServer:
    """``pointlab sim model-server`` in a child process, model ``scripted`` answering ``[10, 10]``."""

    def __init__(self, folder: Path, latency_s: float, start_timeout_s: float = 120.0) -> None:
        script = folder / "answers.jsonl"
        script.write_text(json.dumps({"match": "Point to thing", "answer": "[10, 10]"}) + "\n")
        cmd = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()", "sim", "model-server"]
        cmd += ["--port", "0", "--script", str(script), "--latency-s", repr(latency_s)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + start_timeout_s
        assert self.proc.stdout is not None
        self.base_url = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r'"base_url": "([^"]+)"', line)
            if m:
                self.base_url = m.group(1)
                return
        self.close()
        raise RuntimeError("the sim model server did not start")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _one(items: list, concurrency: int, base_url: str, out: Path) -> dict:
    from ..agents_config import AgentConfig, build_agent
    from .run import RunOptions, run_pointing

    cfg = AgentConfig(
        name="perf", kind="openai", base_url=base_url, model="scripted", point_format="xy_pixels", max_retries=0
    )
    opts = RunOptions(runs=1, concurrency=concurrency, progress=False, max_error_rate=0.0)
    c0, t0 = os.times(), time.perf_counter()
    res = run_pointing(items, build_agent(cfg), out, options=opts)
    wall, c1 = time.perf_counter() - t0, os.times()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    return {
        "concurrency": concurrency,
        "items": len(items),
        "wall_s": wall,
        "items_per_s": len(items) / wall,
        "harness_cpu_ms_per_item": cpu / len(items) * 1e3,
        "errors": res["errors"],
        "accuracy": res["runs"][0]["overall"],
    }


def perf_harness(*, items: int = 1000, concurrency: int = 16, latency_s: float = 0.05, side_px: int = 64) -> dict:
    """Run both measurements (module docstring); returns the JSON document ``pointlab perf harness`` prints.

    Raises: ValueError for ``items < 1``, ``concurrency < 2`` or a negative ``latency_s``; RuntimeError
    when the sim model server does not start.
    """
    if items < 1 or concurrency < 2 or not latency_s >= 0:
        raise ValueError("need items >= 1, concurrency >= 2 and latency_s >= 0")
    with tempfile.TemporaryDirectory(prefix="pointlab-perf-harness-") as d:
        folder = Path(d)
        its = _items(folder, items, side_px)
        server = _ModelServer(folder, latency_s)
        try:
            serial = _one(its, 1, server.base_url, folder / "serial")
            parallel = _one(its, concurrency, server.base_url, folder / "concurrent")
        finally:
            server.close()
    return {
        "latency_s": latency_s,
        "serial": serial,
        "concurrent": parallel,
        "speedup": parallel["items_per_s"] / serial["items_per_s"],
        "speedup_target": 8.0,
        "harness_cpu_ms_per_item": parallel["harness_cpu_ms_per_item"],
        "harness_ms_per_item_target": 5.0,
        "serial_ms_per_item_beyond_latency": (serial["wall_s"] / items - latency_s) * 1e3,
    }
