"""Which study mode ranks agents with fewer robot trials, measured (``pointlab act mode-study``,
docs/statistics.md "Which mode to use").

Two steps:

1. **Record** (``record_outcomes``): every agent runs every instruction, round after round, through the
   real trial machine (``bridge.trials.station.Station.run_trial``) from the start scene restored
   exactly before each trial (a simulator's ``reset_block``), judged by the automatic check (the
   simulator's physics state). These are the outcomes of the trials a study would run: in absolute
   mode one per trial, in pairwise mode one per half (each half also starts from the restored scene).
2. **Resample studies** (``simulate``): a study of a given size draws its trials from those records (the
   instruction uniformly, then one recorded outcome of that agent on that instruction), so the
   instruction's difficulty is shared by both halves of an episode as in a real one; it is scored as a
   study would be (absolute: success counts; pairwise: Bradley-Terry with ties over episodes a scripted
   participant compared: a success beats a failure, the same outcome is a tie) and the ranking it
   yields is checked against the true order (the recorded success rates). The share of studies with
   the whole order right, per size, is the answer; ties in a study's estimates are broken at random.

Running every simulated study itself through the arm would take hours per point; resampling the
machine's own recorded outcomes gives the same studies at the cost of the draws (a bootstrap over
trials, Efron and Tibshirani 1993, ch. 6). What it leaves out: any dependence between trials beyond
the instruction (a scene that drifts, a participant who tires), which a sim with exact resets does
not have either.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pointlab.benchmark.pairwise import Episode, davidson, next_pair
from pointlab.bridge.errors import BridgeError

__all__ = [
    "ModeStudyError",
    "TrialOutcome",
    "MODES",
    "record_outcomes",
    "true_order",
    "simulate",
    "trials_needed",
]

MODES = ("absolute", "pairwise-uniform", "pairwise-adaptive")


class ModeStudyError(BridgeError, ValueError):
    """Records that cannot be resampled (an agent without outcomes on an instruction, tied true rates)."""


@dataclass(frozen=True)
class TrialOutcome:
    """One recorded trial: the agent, the instruction, and whether it succeeded (the automatic check)."""

    agent: str
    instruction: str
    success: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _record(station, agents, instructions, rounds, max_repeats, progress) -> list[TrialOutcome]:
    from pointlab.bridge.trials.headless import HEADLESS_SETTINGS
    from pointlab.bridge.trials.ports import Slot

    out: list[TrialOutcome] = []
    for r in range(rounds):
        # the agents' order turns each round: no agent always runs first after a reset
        turn = list(agents[r % len(agents) :]) + list(agents[: r % len(agents)])
        for text in instructions:
            for agent in turn:
                for _ in range(max_repeats + 1):
                    reset = await station.reset_block()
                    if reset.get("outcome") != "done":
                        raise RuntimeError(f"the scene could not be restored: {reset}")
                    ran = await station.run_trial(agent, text, slot=Slot(), settings=HEADLESS_SETTINGS, auto_judge=True)
                    if ran.result.outcome != "aborted":
                        break
                else:
                    continue  # aborted every time: not an outcome of the agent (counted by nobody)
                if ran.result.outcome is None:
                    continue  # the check could not judge it: left out, as a study would leave it unjudged
                out.append(TrialOutcome(agent, text, ran.result.outcome == "succeeded"))
                if progress is not None:
                    progress(
                        {"round": r + 1, "of": rounds, "agent": agent, "instruction": text, "success": out[-1].success}
                    )
    return out


def record_outcomes(
    station,
    agents: Sequence[str],
    instructions: Sequence[str],
    *,
    rounds: int,
    max_repeats: int = 2,
    progress: Callable[[dict], None] | None = None,
) -> list[TrialOutcome]:
    """Run every agent on every instruction ``rounds`` times through ``station`` (a sim session's
    ``Station``), each trial from the start scene restored exactly, judged by the automatic check; an
    aborted trial is run again up to ``max_repeats`` times (module docstring).

    Raises:
        ValueError: an agent the station does not have, ``rounds < 1``, or a station whose scene is not
            restored by a simulator.
        RuntimeError: a reset failed.
    """
    unknown = [a for a in agents if a not in station.agent_names]
    if unknown:
        raise ValueError(f"unknown agents {unknown}; this session has: {', '.join(station.agent_names)}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    scene = station.ports.scene
    if not (scene is not None and scene.automatic):
        raise ValueError("the mode study restores the scene before every trial: it needs a simulator")
    return asyncio.run(_record(station, list(agents), list(instructions), rounds, max_repeats, progress))


def _table(records: Sequence[TrialOutcome]) -> tuple[list[str], list[str], dict[tuple[str, str], np.ndarray]]:
    agents = list(dict.fromkeys(r.agent for r in records))
    instructions = list(dict.fromkeys(r.instruction for r in records))
    cells: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in records:
        cells[(r.agent, r.instruction)].append(bool(r.success))
    missing = [(a, i) for a in agents for i in instructions if not cells[(a, i)]]
    if missing:
        raise ModeStudyError(f"no recorded outcome for {missing[:3]}: every agent needs every instruction")
    return agents, instructions, {k: np.array(v) for k, v in cells.items()}


def true_order(records: Sequence[TrialOutcome]) -> list[tuple[str, float]]:
    """The agents best first by their recorded success rate averaged over instructions (each
    instruction weighted equally, as studies draw them), with that rate.

    Raises:
        ModeStudyError: a missing agent/instruction cell, or two agents with the same rate (no true
            order to find).
    """
    agents, instructions, cells = _table(records)
    rates = {a: float(np.mean([cells[(a, i)].mean() for i in instructions])) for a in agents}
    order = sorted(rates.items(), key=lambda kv: -kv[1])
    for (a, ra), (b, rb) in zip(order, order[1:]):
        if ra == rb:
            raise ModeStudyError(f"{a} and {b} have the same recorded rate {ra:.3f}: record more rounds")
    return order


def _ranked(scores: Mapping[str, float], rng: np.random.Generator) -> list[str]:
    # equal scores are broken at random: a tie does not find the order by luck of the agents' order
    keys = list(scores)
    jitter = rng.random(len(keys))
    return [k for _, _, k in sorted(((-scores[k], j, k) for k, j in zip(keys, jitter)))]


def _draw(cells, agent: str, text: str, rng: np.random.Generator) -> bool:
    c = cells[(agent, text)]
    return bool(c[rng.integers(len(c))])


def _absolute_study(agents, instructions, cells, n: int, rng) -> list[str]:
    scores = {}
    for a in agents:
        texts = rng.integers(len(instructions), size=n)
        scores[a] = float(sum(_draw(cells, a, instructions[k], rng) for k in texts))
    return _ranked(scores, rng)


def _pairwise_study(agents, instructions, cells, n: int, rule: str, rng) -> list[str]:
    episodes: list[Episode] = []
    for _ in range(n):
        a, b = next_pair(agents, episodes, rule=rule, rng=rng)  # type: ignore[arg-type]
        text = instructions[int(rng.integers(len(instructions)))]
        sa, sb = _draw(cells, a, text, rng), _draw(cells, b, text, rng)
        episodes.append(Episode(a, b, "tie" if sa == sb else "A" if sa else "B"))
    ratings = davidson(episodes, bootstrap_rounds=0)["ratings"]
    return _ranked({a: ratings.get(a, {"rating": 1000.0})["rating"] for a in agents}, rng)


def simulate(
    records: Sequence[TrialOutcome],
    mode: str,
    sizes: Sequence[int],
    *,
    studies: int,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """For each study size (absolute: trials per agent; pairwise: episodes) in ``mode`` (one of
    ``MODES``: ``absolute``, ``pairwise-uniform``, ``pairwise-adaptive``), resample ``studies``
    studies from ``records`` and count those whose ranking is the true order (module docstring).

    Returns:
        ``[{"size", "robot_trials", "correct", "studies", "share"}]``: ``robot_trials`` is what a study
        of that size runs on the arm (absolute: size x agents; pairwise: 2 x size halves).

    Raises:
        ModeStudyError: records without a true order (``true_order``), an unknown mode, sizes < 1.
    """
    if mode not in MODES:
        raise ModeStudyError(f"mode must be one of {list(MODES)}, got {mode!r}")
    if any(int(n) < 1 for n in sizes) or studies < 1:
        raise ModeStudyError("study sizes and the number of studies must be >= 1")
    truth = [a for a, _ in true_order(records)]
    agents, instructions, cells = _table(records)
    out = []
    for k, n in enumerate(sizes):
        rng = np.random.default_rng([seed, k, MODES.index(mode)])
        correct = 0
        for _ in range(studies):
            if mode == "absolute":
                got = _absolute_study(agents, instructions, cells, int(n), rng)
            else:
                got = _pairwise_study(agents, instructions, cells, int(n), mode.removeprefix("pairwise-"), rng)
            correct += got == truth
        out.append(
            {
                "size": int(n),
                "robot_trials": int(n) * (len(agents) if mode == "absolute" else 2),
                "correct": correct,
                "studies": studies,
                "share": correct / studies,
            }
        )
    return out


def trials_needed(rows: Sequence[Mapping[str, Any]], target: float = 0.95) -> dict[str, Any] | None:
    """The smallest simulated size whose share of correct rankings reaches ``target`` (rows of
    ``simulate``), or ``None`` when none does."""
    for row in sorted(rows, key=lambda r: r["size"]):
        if row["share"] >= target:
            return dict(row)
    return None
