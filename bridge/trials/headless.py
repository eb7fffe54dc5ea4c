"""Headless Point-Act runs: scripted instructions through the station, no browser
(``pointlab act trials``).

Instructions file (JSON Lines), one trial per line::

    {"instruction": "pick up the red cube", "expected": {"action": "pick", "object": "red cube"}}
    {"instruction": "put it in the blue bowl", "expected": {"action": "place", "object": "red cube", "container": "blue bowl"}}

``expected`` is optional (the sim judges it); without a file the sim world's demo script is used.
The trials run on the same trial machine as the browser session (``bridge.trials.station``); with no
participant, a completed motion is judged by the automatic outcome check (``bridge.trials.autocheck``:
the simulator's physics state when there is one, else depth before and after) and a refusal is a
failure; a motion the check cannot judge stays unjudged (``outcome`` null, counted in ``unjudged``).
An aborted trial is left out of the success rate, counted in ``aborted``, and the same instruction
is run again, at most ``max_repeats`` times (docs/trials.md).

**No place is charged after a failed pick.** The action of a trial follows the arm's belief
(``bridge.trials.belief``), not the script: a scripted line whose ``expected.action`` differs from
what the belief makes the next trial (a *place* after a pick that held nothing, a *pick* while the
arm still holds something) is **skipped as not applicable**, listed in ``skipped`` with the reason,
and no trial is run or charged for it. A failed pick that lifted *another* object (the agent pointed
at the wrong one) has it put down by opening the gripper where the arm is (not a trial), so the
script's place of the object it asked for is skipped too. Offering the failed pick again instead
would give the agent a second chance the script did not give it.

No reveal time: with nobody watching there is nothing to blind (``TrialSettings.reveal`` is 0 s).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path


from pointlab.bridge.trials.ports import Slot
from pointlab.bridge.trials.record import TrialResult, text_problem
from pointlab.bridge.trials.station import Station, TrialSettings
from pointlab.bridge.trials.timing import RevealRule
from pointlab.bridge.errors import BridgeError

__all__ = [
    "InstructionsError",
    "load_instructions",
    "demo_script",
    "summarize_trials",
    "run_scripted_trials",
    "Progress",
    "HEADLESS_SETTINGS",
]

HEADLESS_SETTINGS = TrialSettings(reveal=RevealRule(0.0, 0.0))


class InstructionsError(BridgeError, ValueError):
    """The instructions file is missing or a line is not ``{"instruction": str, "expected"?: dict}``."""


def load_instructions(path: str | Path) -> list[dict]:
    """Read an instructions JSONL file (format in the module docstring); blank lines are skipped.

    Raises:
        InstructionsError: unreadable file, bad JSON, a line without a non-empty ``instruction``, or an
            instruction that cannot be stored (``bridge.trials.record.text_problem``).
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
        raise InstructionsError(
            f"camera {camera!r} with robot {robot!r} has no simulated scene and so no demo "
            "script: give --instructions FILE.jsonl"
        )
    return world_cls.demo_script()


Progress = Callable[[dict], None]


def _rate_so_far(results: list[TrialResult]) -> tuple[int, int]:
    judged = [t for t in results if t.outcome in ("succeeded", "failed")]
    return sum(t.outcome == "succeeded" for t in judged), len(judged)


async def _run(
    station: Station,
    agent: str,
    script: list[dict],
    max_repeats: int,
    settings: TrialSettings,
    progress: Progress | None,
    repeat: int,
) -> tuple[list[TrialResult], list[dict], str | None]:
    results: list[TrialResult] = []
    skipped: list[dict] = []
    lines = [(k, item) for _ in range(repeat) for k, item in enumerate(script, 1)]
    for n, (k, item) in enumerate(lines):
        if n and k == 1:  # the script again: from the starting scene, restored exactly
            reset = await station.reset_block()
            if reset["outcome"] != "done":
                raise RuntimeError(f"the scene could not be reset before repeating the script: {reset}")
        wanted = (item.get("expected") or {}).get("action")
        action = station.next_action()
        if wanted in ("pick", "place") and wanted != action:
            why = f"the script asks for a {wanted}, but the arm " + (
                "holds nothing (the pick before it held nothing, or did not run)"
                if wanted == "place"
                else "still holds something"
            )
            skipped.append(
                {"line": k, "round": n // len(script) + 1, "instruction": item["instruction"], "reason": why}
            )
            if progress is not None:
                progress(
                    {
                        "event": "skipped",
                        "line": k,
                        "of": len(script),
                        "round": n // len(script) + 1,
                        "agent": agent,
                        "reason": why,
                    }
                )
            continue
        for _ in range(max_repeats + 1):
            ran = await station.run_trial(
                agent,
                item["instruction"],
                expected=item.get("expected"),
                slot=Slot(),
                settings=settings,
                auto_judge=True,
            )
            results.append(ran.result)
            if progress is not None:
                ok, judged = _rate_so_far(results)
                progress(
                    {
                        "event": "trial",
                        "line": k,
                        "of": len(script),
                        "round": n // len(script) + 1,
                        "agent": agent,
                        "action": ran.result.action,
                        "outcome": ran.result.outcome,
                        "failure_stage": ran.result.failure_stage,
                        "abort": ran.result.abort.code if ran.result.abort else None,
                        "successes": ok,
                        "judged": judged,
                    }
                )
            if ran.result.outcome != "aborted":
                break
        else:
            if all(r.abort is not None and r.abort.code == "camera_error" for r in results[-(max_repeats + 1) :]):
                # every attempt found no picture (a recording that ended, a camera unplugged): the rest
                # of the script would only repeat that; what ran is stored
                return (
                    results,
                    skipped,
                    (
                        f"the camera gave no picture in {max_repeats + 1} trial(s) in a row "
                        f"({ran.result.abort.detail if ran.result.abort else ''}); stopped at line {k}"
                    ),
                )
        if ran.result.action == "pick" and ran.result.outcome == "failed" and station.belief.holding:
            # a failed pick that lifted something else: put it down (not a trial), so that the script's
            # place of the object it asked for is skipped as not applicable, as after an empty grasp
            await station.release()
            if progress is not None:
                progress(
                    {
                        "event": "released",
                        "line": k,
                        "of": len(script),
                        "round": n // len(script) + 1,
                        "agent": agent,
                        "reason": "the failed pick lifted another object: the gripper was opened",
                    }
                )
    return results, skipped, None


def summarize_trials(
    agent: str, results: list[TrialResult], skipped: Sequence[dict] = (), stopped: str | None = None
) -> dict:
    """``{"agent", "trials": [...], "success_rate", "successes", "judged", "aborted", "unjudged",
    "failure_stages": {stage: n}, "skipped": [...], "stopped"}``: the rate over exactly the trials with
    an outcome (``None`` when none); ``stopped`` says why the run ended early (``None``: it did not)."""
    ok, judged = _rate_so_far(results)
    stages: dict[str, int] = {}
    for t in results:
        if t.failure_stage is not None and t.outcome != "aborted":  # aborts are counted in ``aborted``
            stages[t.failure_stage] = stages.get(t.failure_stage, 0) + 1
    return {
        "agent": agent,
        "trials": [t.to_dict() for t in results],
        "successes": ok,
        "judged": judged,
        "success_rate": ok / judged if judged else None,
        "aborted": sum(t.outcome == "aborted" for t in results),
        "unjudged": sum(t.outcome is None for t in results),
        "failure_stages": stages,
        "skipped": list(skipped),
        "stopped": stopped,
    }


def run_scripted_trials(
    station: Station,
    agent: str,
    script: list[dict],
    *,
    max_repeats: int = 2,
    settings: TrialSettings = HEADLESS_SETTINGS,
    progress: Progress | None = None,
    repeat: int = 1,
) -> dict:
    """Run ``script`` with ``agent`` on a station (each trial stored by the station's store port,
    outside any study); an aborted trial is repeated up to ``max_repeats`` times; a line that does not
    apply is skipped (module docstring). ``progress`` gets one dict per trial or skip, as it happens.
    ``repeat``: run the script that many times, the scene restored before each (a simulator only).

    Returns:
        ``summarize_trials`` of every trial run (aborted ones included in ``trials``).

    Raises:
        ValueError: ``agent`` is not one of the station's agents, ``max_repeats < 0``, ``repeat < 1``, or
            ``repeat > 1`` where no simulator can restore the scene.
        RuntimeError: the scene could not be reset between repeats (trials already run are stored).

    A run whose camera gives no picture for every attempt of a line (a recording that ended, a camera
    unplugged) stops there: the summary's ``stopped`` says so.
        pointlab.bridge.trials.station.StationBusy: the station cannot run trials (stopped, not
            ready, below the storage floor); trials already run are stored.
    """
    if agent not in station.agent_names:
        raise ValueError(f"unknown agent {agent!r}; this session has: {', '.join(station.agent_names)}")
    if max_repeats < 0:
        raise ValueError(f"max_repeats must be >= 0, got {max_repeats}")
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    scene = station.ports.scene
    if repeat > 1 and not (scene is not None and scene.automatic):
        raise ValueError(
            "repeating the script needs a simulator to restore the scene; on real hardware run it "
            "once per reset of the scene"
        )
    results, skipped, stopped = asyncio.run(_run(station, agent, script, max_repeats, settings, progress, repeat))
    return summarize_trials(agent, results, skipped, stopped)
