"""Headless Point-Act runs: scripted instructions through a running session, no browser
(``pointlab act trials``).

Instructions file (JSON Lines), one trial per line::

    {"instruction": "pick up the red cube", "expected": {"action": "pick", "object": "red cube"}}
    {"instruction": "put it in the blue bowl", "expected": {"action": "place", "object": "red cube", "container": "blue bowl"}}

``expected`` is optional (the sim judges it, ``sim_mock.world.SimWorld.judge``); without a file the
sim scene's demo script (``sim_mock.demo.DEMO_SCRIPT``) is used. A trial counts as a success when
the simulator judged it a success, or, when the simulator could not judge (no ``expected``, a real
robot), when the robot outcome is ``done``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from .store import text_problem
from .trial import TrialResult

__all__ = ["InstructionsError", "load_instructions", "demo_script", "trial_success", "run_scripted_trials"]


class InstructionsError(ValueError):
    """The instructions file is missing or a line is not ``{"instruction": str, "expected"?: dict}``."""


def load_instructions(path: str | Path) -> list[dict]:
    """Read an instructions JSONL file (format in the module docstring); blank lines are skipped.

    Raises:
        InstructionsError: unreadable file, bad JSON, a line without a non-empty ``instruction``, or an
            instruction that cannot be stored (``bridge.store.text_problem``).
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
    from .worlds import world_class_for

    world_cls = world_class_for(camera, robot)
    if world_cls is None:
        raise InstructionsError(f"camera {camera!r} with robot {robot!r} has no simulated scene and so no demo "
                                "script: give --instructions FILE.jsonl")
    return world_cls.demo_script()


def trial_success(t: TrialResult) -> bool:
    """The sim's judgement when known, else ``robot_outcome == "done"``."""
    return bool(t.sim_success) if t.sim_success is not None else t.robot_outcome == "done"


async def _run(runner, agent: str, script: list[dict], store) -> list[TrialResult]:
    results = []
    for item in script:
        res = await runner.run_trial(agent, item["instruction"], expected=item.get("expected"))
        if store is not None:
            store.save_trial(res)  # one commit per trial: a crash loses nothing already run
        results.append(res)
    return results


def run_scripted_trials(session, agent: str, script: list[dict]) -> dict:
    """Run ``script`` with ``agent`` on a started session, saving each trial in ``session.store``.

    Returns:
        ``{"trials": [TrialResult.to_dict(), ...], "success_rate": float, "successes": int, "agent": str}``.

    Raises:
        ValueError: ``agent`` is not one of the session's agents.
    """
    if agent not in session.runner.agent_names:
        raise ValueError(f"unknown agent {agent!r}; this session has: {', '.join(session.runner.agent_names)}")
    results = asyncio.run(_run(session.runner, agent, script, session.store))
    ok = sum(trial_success(t) for t in results)
    return {"agent": agent, "trials": [t.to_dict() for t in results], "successes": ok,
            "success_rate": ok / len(results) if results else 0.0}
