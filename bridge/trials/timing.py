"""When an agent's point may take effect: one study-wide distribution, so timing cannot unblind.

PointArena sec. 3.4 runs Point-Act double-blind, with a human reference among the agents. A person
clicks a point in 6-20 s; a model answers in 0.5-7 s. Any rule that lets an answer act as soon as it
arrives tells the participant which agent is the person. A fixed floor (the arm may move no earlier
than 4 s after the request) does not help when the person is slower than the floor.

**The rule.** At the start of every trial a *reveal time* ``S`` is drawn from one distribution that
is the same for every agent of the study (uniform on ``[low_s, high_s]``); the point takes effect
(the arm command, or a refusal's message) at ``max(S, ready)``, where ``ready`` is when the answer
and its target are there. A model is always ready before ``S``, so its effect time is ``S``; the
human reference's is ``S`` too, except when the person is slower than the draw (a *late* answer),
which the results report per agent so an operator can widen the range.

**The default, and why.** ``[10, 26]`` s. With a human reference modelled as log-normal with median
9 s and sigma 0.35 (5-95 % within 5-16 s, the 6-20 s range seen in use), the share of late answers
is about 8 % and the largest gap between the human's and a model's instruction-to-motion
distributions (the two-sample Kolmogorov-Smirnov statistic between the populations) is 0.03; 30
trials per agent cannot tell them apart. Narrower ranges wait less and leak more (docs/trials.md,
"Timing", has the table). ``[x, x]`` is a fixed floor (the old rule, kept for studies run with it).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["RevealRule", "DEFAULT_REVEAL", "late"]


@dataclass(frozen=True)
class RevealRule:
    """The study-wide distribution of reveal times: uniform on ``[low_s, high_s]`` seconds after the
    request was sent.

    Raises:
        ValueError: a bound that is not a finite number in [0, 300], or ``low_s > high_s``.
    """

    low_s: float = 10.0
    high_s: float = 26.0

    def __post_init__(self) -> None:
        for name in ("low_s", "high_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 300:
                raise ValueError(f"reveal {name} must be a number of seconds in [0, 300], got {v!r}")
        if self.low_s > self.high_s:
            raise ValueError(f"reveal low_s {self.low_s} is above high_s {self.high_s}")

    def draw(self, rng: random.Random) -> float:
        """One reveal time, seconds (the same draw for every agent: ``rng`` is the station's)."""
        return self.low_s if self.high_s == self.low_s else rng.uniform(self.low_s, self.high_s)

    def to_dict(self) -> dict:
        return {"low_s": self.low_s, "high_s": self.high_s}


DEFAULT_REVEAL = RevealRule()


def late(timings_s: dict) -> bool | None:
    """Whether a stored trial's answer came after its drawn reveal time (``timings_s`` of a
    ``TrialResult``: ``reveal`` the draw, ``ready`` when answer and target were there); ``None`` when
    the trial has neither (aborted early, or stored before this rule)."""
    reveal, ready = timings_s.get("reveal"), timings_s.get("ready")
    if reveal is None or ready is None:
        return None
    return ready > reveal
