"""``pointlab perf video``: how fast frame budgets are read from an encoded video.

A synthetic video (default 5 minutes at 30 fps, 320x240, H.264 with a key frame every second) is
written to a temporary folder; then, for each budget, the nested selection is read by seeking to
the key frame before each chosen frame (``method="seek"``), and compared with the in-run baseline
of decoding every frame from the start up to the last chosen one (``method="sequential"``, which
for endpoint-including samplers means the whole video). Reported: wall-time percentiles, sampled
frames per second, decoded frames per second of the baseline, per-frame seek latency percentiles,
and the speed-up of seeking over the baseline.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pointlab.benchmark.perfstats import summarize

from .frames import VideoFileFrames, write_video
from .sampling import sample_frames

__all__ = ["synthetic_frames", "make_synthetic_video", "measure_video_perf", "run_video_perf", "percentiles"]


def percentiles(xs: Sequence[float]) -> dict[str, float]:
    """``{"p50", "p90", "p99", "min", "max", "n"}`` of a sample (numpy linear interpolation)."""
    return summarize(xs, ("p50", "p90", "p99", "min", "max", "n"))


def synthetic_frames(n: int, width: int, height: int) -> Iterator[np.ndarray]:
    """``n`` RGB frames of a drifting colour pattern with a frame counter bar (so that codecs
    cannot collapse them and every frame differs)."""
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.stack(
        [
            (xx * 255 // max(width - 1, 1)),
            (yy * 255 // max(height - 1, 1)),
            ((xx + yy) * 127 // max(width + height - 2, 1)),
        ],
        axis=-1,
    ).astype(np.uint8)
    for i in range(n):
        img = np.roll(base, shift=(i * 2) % width, axis=1)
        bar = int((i % 1000) / 1000 * width)
        img[: height // 10, :bar] = 255
        yield img


def make_synthetic_video(
    path: str | Path, duration_s: float = 300.0, fps: int = 30, width: int = 320, height: int = 240, gop: int = 30
) -> dict[str, Any]:
    """Encode the synthetic video; returns its description and the encode time."""
    n = int(round(duration_s * fps))
    t0 = time.perf_counter()
    written = write_video(synthetic_frames(n, width, height), path, fps=fps, gop=gop)
    return {
        "path": str(path),
        "frames": written,
        "fps": fps,
        "duration_s": written / fps,
        "size": [width, height],
        "gop": gop,
        "encode_s": time.perf_counter() - t0,
    }


def measure_video_perf(
    path: str | Path, budgets: Sequence[int] = (16, 32, 64), repeats: int = 3, baseline_repeats: int = 2
) -> dict[str, Any]:
    """Time budget reads of one video (see module docstring). Raises ``FrameSourceError`` for a bad video."""
    t0 = time.perf_counter()
    src = VideoFileFrames(path)
    index_s = time.perf_counter() - t0
    try:
        sampler_us = []
        for _ in range(200):
            t = time.perf_counter()
            for b in budgets:
                sample_frames(src.total, b, "nested")
            sampler_us.append((time.perf_counter() - t) * 1e6 / len(budgets))
        largest = sample_frames(src.total, max(budgets), "nested")
        base = []
        for _ in range(baseline_repeats):
            t = time.perf_counter()
            src.read_many(largest.indices, method="sequential")
            base.append(time.perf_counter() - t)
        decoded = largest.indices[-1] + 1
        base_p = percentiles(base)
        out: dict[str, Any] = {
            "frames": src.total,
            "index_s": index_s,
            "sampler_us": percentiles(sampler_us),
            "baseline_sequential": {
                "what": f"decode frames 0..{decoded - 1} and keep the {len(largest.indices)} of budget {max(budgets)}",
                "wall_s": base_p,
                "decoded_fps": decoded / base_p["p50"],
            },
            "seek": {},
        }
        for b in budgets:
            sel = sample_frames(src.total, b, "nested")
            walls, per_frame = [], []
            for _ in range(repeats):
                t = time.perf_counter()
                for i in sel.indices:
                    ti = time.perf_counter()
                    src.read_many([i], method="seek")
                    per_frame.append((time.perf_counter() - ti) * 1e3)
                walls.append(time.perf_counter() - t)
            w = percentiles(walls)
            out["seek"][str(b)] = {
                "num_frames": sel.num_frames,
                "wall_s": w,
                "sampled_fps": sel.num_frames / w["p50"],
                "per_frame_ms": percentiles(per_frame),
                "speedup_vs_sequential": base_p["p50"] / w["p50"],
            }
        return out
    finally:
        src.close()


def run_video_perf(
    duration_s: float = 300.0,
    fps: int = 30,
    width: int = 320,
    height: int = 240,
    gop: int = 30,
    budgets: Sequence[int] = (16, 32, 64),
    repeats: int = 3,
    keep: str | Path | None = None,
) -> dict[str, Any]:
    """Make the synthetic video (in a temporary folder unless ``keep`` names a file) and measure it."""
    with tempfile.TemporaryDirectory(prefix="pointlab-perf-video-") as tmp:
        path = Path(keep) if keep else Path(tmp) / "synthetic.mp4"
        video = make_synthetic_video(path, duration_s, fps, width, height, gop)
        result = measure_video_perf(path, budgets, repeats)
    return {"video": video, **result}
