"""``pointlab sim timing-check``: can instruction-to-motion times tell the human reference apart?

Runs the whole sim session (ROS node set, sim arm and camera, the sim models) and, for every round,
one trial per agent: ``sim-oracle``, ``sim-noisy`` and the human reference, whose clicks come from a
scripted person at human-like delays (log-normal, median ``human_median_s``, sigma ``human_sigma``;
the click is the oracle's true point). Every trial runs under the study-wide reveal rule
(``bridge.trials.timing``) exactly as a browser trial does. The instruction-to-motion time of each
trial (``timings_s["to_motion"]``: request sent -> arm command) is collected per agent, and the
two-sample Kolmogorov-Smirnov test (scipy.stats.ks_2samp) compares the human's against each model's:
p > 0.05 means these trials cannot tell them apart.

``time_scale`` compresses the study's time (the reveal range and the human's delays are multiplied
by it; the arm moves at ``arm_time_scale``) so that 30 rounds take minutes; times are reported back
in study seconds (divided by ``time_scale``). The models' own answer times are not scaled (they are
what the sim model server takes), which only makes a model look faster than it would: a harder test.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import threading
import time
from typing import Any

__all__ = ["run_timing_check", "HumanScript"]

log = logging.getLogger(__name__)


class HumanScript:
    """A person at the operator console: answers each open human-reference request with the oracle's
    point after a log-normal delay (seconds, ``median_s * exp(sigma * N(0, 1))``). Runs in a thread."""

    def __init__(self, relay, oracle, *, median_s: float, sigma: float, seed: int = 0) -> None:
        self.relay, self.oracle = relay, oracle
        self.median_s, self.sigma = median_s, sigma
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._seen: set[str] = set()
        self.delays_s: list[float] = []
        self._thread = threading.Thread(target=self._loop, name="pointlab-human-script", daemon=True)

    def __enter__(self) -> "HumanScript":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        import base64

        import cv2
        import numpy as np

        while not self._stop.is_set():
            for req in self.relay.pending():
                rid = req["request_id"]
                if rid in self._seen:
                    continue
                self._seen.add(rid)
                delay = self.median_s * math.exp(self.sigma * self._rng.gauss(0.0, 1.0))
                self.delays_s.append(delay)
                jpeg = base64.b64decode(req["jpeg_b64"])
                bgr = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
                assert bgr is not None  # the station's own JPEG
                rgb = bgr[:, :, ::-1]
                pts = self.oracle.points(req["instruction"], rgb)
                if self._stop.wait(delay):
                    return
                if pts:
                    self.relay.answer(rid, *pts[0])
                else:
                    self.relay.decline(rid)
            self._stop.wait(0.01)


def run_timing_check(
    *,
    rounds: int = 30,
    time_scale: float = 0.1,
    arm_time_scale: float = 0.05,
    reveal_low_s: float = 10.0,
    reveal_high_s: float = 26.0,
    human_median_s: float = 9.0,
    human_sigma: float = 0.35,
    seed: int = 0,
    progress=None,
) -> dict:
    """Run the check (module docstring) and return ``{"agents": {name: {"n", "to_motion_s": {p5, p50,
    p95}, "late_share"}}, "ks": {model: {"statistic", "pvalue"}}, "settings": {...}}``.

    Raises:
        ValueError: ``rounds < 1``, a non-positive scale, or a bad reveal range.
    """
    from scipy import stats

    from pointlab.bridge.session import SessionConfig, start_session
    from pointlab.bridge.trials.station import TrialSettings
    from pointlab.bridge.trials.timing import RevealRule

    from .oracle import SceneOracle

    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not (time_scale > 0 and arm_time_scale > 0 and human_median_s > 0 and human_sigma >= 0):
        raise ValueError("time_scale, arm_time_scale and human_median_s must be > 0, human_sigma >= 0")
    settings = TrialSettings(reveal=RevealRule(reveal_low_s * time_scale, reveal_high_s * time_scale))
    agents = ("sim-oracle", "sim-noisy", "human")
    times: dict[str, list[float]] = {a: [] for a in agents}
    lates: dict[str, list[bool]] = {a: [] for a in agents}
    with start_session(SessionConfig(time_scale=arm_time_scale, seed=seed)) as session:
        station = session.station
        oracle = SceneOracle(session.world.sim)

        async def go() -> None:
            for k in range(rounds):
                for agent in agents:
                    await station.reset_block()  # every trial a pick from the start scene
                    ran = await station.run_trial(agent, "pick up the red cube", settings=settings, auto_judge=True)
                    tm = ran.result.timings_s
                    if "to_motion" in tm:
                        times[agent].append(tm["to_motion"] / time_scale)
                        lates[agent].append(tm["ready"] > tm["reveal"])
                    if progress is not None:
                        progress(
                            f"round {k + 1}/{rounds} {agent}: "
                            + (
                                f"motion at {tm['to_motion'] / time_scale:.1f} s"
                                if "to_motion" in tm
                                else f"no motion ({ran.result.robot_outcome})"
                            )
                        )

        with HumanScript(
            session.ports.human, oracle, median_s=human_median_s * time_scale, sigma=human_sigma, seed=seed
        ):
            t0 = time.monotonic()
            asyncio.run(go())
            elapsed = time.monotonic() - t0

    def summary(xs: list[float]) -> dict:
        import numpy as np

        return (
            {
                "p5": round(float(np.percentile(xs, 5)), 2),
                "p50": round(float(np.percentile(xs, 50)), 2),
                "p95": round(float(np.percentile(xs, 95)), 2),
            }
            if xs
            else {}
        )

    out: dict[str, Any] = {
        "agents": {
            a: {
                "n": len(times[a]),
                "to_motion_s": summary(times[a]),
                "late_share": round(sum(lates[a]) / len(lates[a]), 3) if lates[a] else None,
            }
            for a in agents
        },
        "ks": {},
        "settings": {
            "rounds": rounds,
            "time_scale": time_scale,
            "reveal_s": [reveal_low_s, reveal_high_s],
            "human_median_s": human_median_s,
            "human_sigma": human_sigma,
            "seed": seed,
        },
        "elapsed_s": round(elapsed, 1),
    }
    for model in ("sim-oracle", "sim-noisy"):
        if times["human"] and times[model]:
            ks = stats.ks_2samp(times["human"], times[model])
            out["ks"][model] = {"statistic": round(float(ks.statistic), 4), "pvalue": round(float(ks.pvalue), 4)}
    return out
