"""Headless Point-Act runs: scripted instructions through a running session, no browser
(``pointlab act trials``).

Instructions file (JSON Lines), one trial per line::

    {"instruction": "pick up the red cube", "expected": {"action": "pick", "object": "red cube"}}
    {"instruction": "put it in the blue bowl", "expected": {"action": "place", "object": "red cube", "container": "blue bowl"}}

``expected`` is optional (the sim judges it); without a file the sim world's demo script is used.
With no participant, a trial is judged by the automatic outcome check (``bridge.trials.autocheck``: the
simulator's physics state when there is one, else depth before and after); a trial it cannot
judge stays unjudged (``outcome`` null) and counts in ``unjudged``. An aborted trial (e-stop, robot
fault, agent or camera error) is left out of the success rate, counted in ``aborted``, and the
same instruction is run again, at most ``max_repeats`` times (docs/trials.md).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pointlab.bridge.trials.attribution import settle
from pointlab.bridge.study.store import text_problem
from pointlab.bridge.trials.record import TrialResult

__all__ = ["InstructionsError", "load_instructions", "demo_script", "auto_judgement", "summarize_trials",
           "run_scripted_trials"]


class InstructionsError(ValueError):
    """The instructions file is missing or a line is not ``{"instruction": str, "expected"?: dict}``."""


def load_instructions(path: str | Path) -> list[dict]:
    """Read an instructions JSONL file (format in the module docstring); blank lines are skipped.

    Raises:
        InstructionsError: unreadable file, bad JSON, a line without a non-empty ``instruction``, or an
            instruction that cannot be stored (``bridge.study.store.text_problem``).
    """
    from pointlab.benchmark.records import RecordError, iter_jsonl

    path = Path(path)
    try:
        rows = list(iter_jsonl(path))
    except RecordError as e:
        raise InstructionsError(f"instructions file: {e}") from e
    out = []
    for where, d in rows:  # where: "file:line"
        if not isinstance(d.get("instruction"), str) or not d["instruction"].strip():
            raise InstructionsError(f'{where}: need {{"instruction": "...", "expected": {{...}}}}')
        if problem := text_problem(d["instruction"]):  # refused before anything runs: it could not be saved
            raise InstructionsError(f"{where}: the instruction cannot be used: {problem}")
        if d.get("expected") is not None and not isinstance(d["expected"], dict):
            raise InstructionsError(f"{where}: expected must be an object")
        out.append({"instruction": d["instruction"], "expected": d.get("expected")})
    if not out:
        raise InstructionsError(f"{path}: no instructions")
    return out


def demo_script(camera: str = "sim", robot: str = "sim") -> list[dict]:
    """The demo script (``{"instruction", "expected"}`` dicts) of the simulated world a session with
    this camera and robot runs in (``bridge.worlds``).

    Raises:
        InstructionsError: neither the camera nor the robot is simulated (no scene to script).
    """
    from pointlab.bridge.worlds import world_class_for

    world_cls = world_class_for(camera, robot)
    if world_cls is None:
        raise InstructionsError(f"camera {camera!r} with robot {robot!r} has no simulated scene and so no demo "
                                "script: give --instructions FILE.jsonl")
    return world_cls.demo_script()


def auto_judgement(t: TrialResult) -> bool | None:
    """What the automatic check says of ``t`` (``None``: it cannot tell)."""
    return None if t.auto_check is None else t.auto_check.success


async def _run(runner, agent: str, script: list[dict], store, max_repeats: int) -> list[TrialResult]:
    results = []
    for item in script:
        for attempt in range(max_repeats + 1):
            res = settle(await runner.run_trial(agent, item["instruction"], expected=item.get("expected")), None)
            if res.outcome != "aborted":
                settle(res, auto_judgement(res))
            if store is not None:
                store.save_trial(res)  # one commit per trial: a crash loses nothing already run
            results.append(res)
            if res.outcome != "aborted":
                break
    return results


def summarize_trials(agent: str, results: list[TrialResult]) -> dict:
    """``{"agent", "trials": [...], "success_rate", "successes", "judged", "aborted", "unjudged",
    "failure_stages": {stage: n}}``: the rate over judged, non-aborted trials (``None`` when none)."""
    judged = [t for t in results if t.outcome in ("succeeded", "failed")]
    ok = sum(t.outcome == "succeeded" for t in judged)
    stages: dict[str, int] = {}
    for t in results:
        if t.failure_stage is not None:
            stages[t.failure_stage] = stages.get(t.failure_stage, 0) + 1
    return {"agent": agent, "trials": [t.to_dict() for t in results], "successes": ok, "judged": len(judged),
            "success_rate": ok / len(judged) if judged else None,
            "aborted": sum(t.outcome == "aborted" for t in results),
            "unjudged": sum(t.outcome is None for t in results), "failure_stages": stages}


def run_scripted_trials(session, agent: str, script: list[dict], *, max_repeats: int = 2) -> dict:
    """Run ``script`` with ``agent`` on a started session, saving each trial in ``session.store``; an
    aborted trial is repeated up to ``max_repeats`` times.

    Returns:
        ``summarize_trials`` of every trial run (aborted ones included in ``trials``).

    Raises:
        ValueError: ``agent`` is not one of the session's agents, or ``max_repeats < 0``.
    """
    if agent not in session.runner.agent_names:
        raise ValueError(f"unknown agent {agent!r}; this session has: {', '.join(session.runner.agent_names)}")
    if max_repeats < 0:
        raise ValueError(f"max_repeats must be >= 0, got {max_repeats}")
    results = asyncio.run(_run(session.runner, agent, script, session.store, max_repeats))
    return summarize_trials(agent, results)
