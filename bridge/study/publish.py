"""A Point-Act study as a versioned folder a paper can cite (``pointlab act publish``,
docs/statistics.md "Publishing a study").

=========================  ========================================================================
``bundle.json``            ``{"format": "pointlab-study-bundle", "version": 1, "created_unix_s",
                           "study_id", "files"}``: what this folder is and what is in it
``trials.jsonl``           the trial table: every stored field of every trial of the study, one JSON
                           object per line (the numbers below are computed from this file alone)
``surveys.jsonl``          the SUS questionnaires, one per line (responses and score)
``trials.csv``, ``sus.csv``, ``blocks.csv``   the same for a spreadsheet (``act export``'s CSVs)
``episodes.jsonl``, ``episodes.csv``   a pairwise study's episodes (both agents in the order they
                           acted, preference, progress scores, reason), from which its ratings come
``results.json``           per agent: judged trials, successes, success rate with its 95 % Wilson
                           interval, the automatic check's rate, participant/check agreement and
                           Cohen's kappa, failure stages, aborted trials, short blocks, SUS (mean and
                           every score); the short blocks; the counts
``results.csv``            the per-agent table
                           (a pairwise study: ``pairwise``, its ratings with bootstrap intervals, the
                           task-bucket model, the win matrix and the progress per agent)
``plots/``                 ``success`` and ``sus`` (a pairwise study: ``success`` and ``pairwise``) as
                           SVG and PNG (the results page's charts)
``study.json``             the study's configuration (agents, trials per agent, design, reveal-time
                           range, repeats, scene) and its participants (labels and agent orders only)
``reference/``             the study's reference scene and each block start's frame (JPEG)
``software.json``          pointlab's version, Python, the libraries the numbers depend on, the
                           stations and calibrations the trials name, and the given calibration file
``recordings.json``        every trial's recording and clip (paths relative to the recordings folder,
                           sizes, and whether the file is there): an index, the files stay put
``README.md``              the methods text with this study's numbers filled in
``MANIFEST.sha256``        the SHA-256 of every other file (``sha256sum -c MANIFEST.sha256``)
=========================  ========================================================================

Invitation tokens are never written (they are passwords of the participants' pages).
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from pointlab.benchmark.bundle import finish_bundle, not_empty
from pointlab.benchmark.records import dumps_json, finite_json
from pointlab.bridge.errors import BridgeError
from pointlab.bridge.recording.layout import RecordingLayout, recording_of
from pointlab.bridge.study.plots import pairwise_figure, save_figure, success_figure, sus_figure
from pointlab.bridge.study.results import (
    agent_results,
    blocks_csv,
    study_blocks,
    sus_csv,
    trial_log_csv,
)
from pointlab.bridge.study.store import Store, StoreError

__all__ = ["publish_study", "study_numbers", "PublishError", "BUNDLE_FORMAT", "BUNDLE_VERSION"]

BUNDLE_FORMAT = "pointlab-study-bundle"
BUNDLE_VERSION = 1
_LIBRARIES = ("numpy", "scipy", "matplotlib", "sqlalchemy", "mujoco", "eclipse-zenoh", "openai", "xarm-python-sdk")
_RESULT_COLUMNS = (
    "agent",
    "n_trials",
    "n_aborted",
    "n_judged",
    "n_succeeded",
    "success_rate",
    "ci95_low",
    "ci95_high",
    "auto_success_rate",
    "agreement",
    "kappa",
    "n_compared",
    "n_short_blocks",
    "mean_sus",
    "n_surveys",
    "failure_stages",
)


class PublishError(BridgeError, ValueError):
    """The study does not exist or the output folder is not new or empty."""


def study_numbers(
    study: dict, trials: list[dict], surveys: list[dict], participants: list[dict], episodes: list[dict] | None = None
) -> dict[str, Any]:
    """Every number of ``results.json`` from the trial table, the surveys, the participants and, for a
    pairwise study, its episodes (the function a reader re-runs on ``trials.jsonl`` and
    ``episodes.jsonl`` to check a bundle)."""
    pairwise = study.get("mode") == "pairwise"
    blocks = [] if pairwise else study_blocks(study, trials, participants)
    if pairwise:  # a void episode's halves are not rated (pairwise_results.rated_trials)
        from pointlab.bridge.study.pairwise_results import rated_trials

        agents = agent_results(study["agents"], rated_trials(episodes or [], trials), surveys, blocks)
    else:
        agents = agent_results(study["agents"], trials, surveys, blocks)
    numbers: dict[str, Any] = {
        "agents": agents,
        "n_trials": len(trials),
        "n_participants": len(participants),
        "n_surveys": len(surveys),
        "short_blocks": [
            {k: b[k] for k in ("participant", "block", "agent", "kept", "aborted")} for b in blocks if b["short"]
        ],
    }
    if pairwise:
        from pointlab.bridge.study.pairwise_results import pairwise_results

        res = pairwise_results(study, episodes or [], trials, participants)
        numbers["pairwise"] = {k: v for k, v in res.items() if k != "log"}  # the log is episodes.jsonl
    return finite_json(numbers)


def _jsonl(rows: list[dict]) -> str:
    return "".join(dumps_json(r, compact=True) + "\n" for r in finite_json(rows))


def _results_csv(agents: list[dict]) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(_RESULT_COLUMNS)
    for a in agents:
        ci = a.get("ci95") or [None, None]
        row = {**a, "ci95_low": ci[0], "ci95_high": ci[1], "failure_stages": json.dumps(a["failure_stages"])}
        w.writerow(["" if row.get(c) is None else row[c] for c in _RESULT_COLUMNS])
    return buf.getvalue()


def _software(trials: list[dict], calibration: Path | None) -> dict[str, Any]:
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    out: dict[str, Any] = {
        "pointlab": version("pointlab"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "libraries": {d: version(d) for d in _LIBRARIES},
        "stations": sorted({t["station"] for t in trials if t.get("station")}),
        "calibration": None,
    }
    if calibration is not None:
        data = calibration.read_bytes()
        out["calibration"] = {"file": f"calibration/{calibration.name}", "sha256": hashlib.sha256(data).hexdigest()}
    return out


def _recordings(trials: list[dict], recordings_dir: Path | None) -> list[dict]:
    layouts: dict[str | None, RecordingLayout] = {}
    out = []
    for t in trials:
        station = t.get("station") if isinstance(t.get("station"), str) else None
        item: dict[str, Any] = {"trial_uid": t["trial_uid"], "id": t["id"], "station": station, "recording": None}
        if recordings_dir is not None:
            key = station if station and (recordings_dir / station).is_dir() else None
            layout = layouts.setdefault(key, RecordingLayout(recordings_dir / key if key else recordings_dir))
            rec = recording_of(t, layout)
        else:
            rec = None
            raw = t.get("recording")
            item["recording"] = raw
        if rec is not None:
            files = {}
            for kind, rel in (("bag", rec.bag), ("mcap", rec.mcap), ("clip", rec.clip)):
                path = layout.resolve(rel) if rel else None
                files[kind] = {"path": rel, "present": bool(path is not None and path.exists())}
            item["recording"] = {
                **files,
                "mcap_bytes": rec.mcap_bytes,
                "clip_bytes": rec.clip_bytes,
                "complete": rec.complete,
                "folder": f"{station}/" if layout.root != recordings_dir else "",
            }
        out.append(item)
    return out


def _arm_words(trials: list[dict]) -> str:
    """The arm as the methods text names it: a simulated study must not read as a real robot's (a trial
    run in simulation has the simulator's own judgement, ``sim_success``)."""
    simulated = [t.get("sim_success") is not None for t in trials]
    if simulated and all(simulated):
        return "a simulated robot arm (a MuJoCo model of the UFACTORY Lite 6)"
    if any(simulated):
        return "a robot arm (UFACTORY Lite 6; some trials in its MuJoCo simulation, see trials.jsonl)"
    return "a robot arm (UFACTORY Lite 6)"


def _span(low: float, high: float, digits: int = 0) -> str:
    """``low to high``: a hyphen between two numbers reads wrong when one is negative (-133--23)."""
    return f"{low:.{digits}f} to {high:.{digits}f}"


def _pairwise_methods(study: dict, numbers: dict, reveal: tuple[float, float], arm: str) -> list[str]:
    pw = numbers["pairwise"]
    ratings = pw["ratings"]["ratings"]
    lines = [
        "## Methods",
        "",
        f"{numbers['n_participants']} participants were each to compare {study['trials_per_agent']} episodes of "
        f"{arm}. In an episode the participant gave one instruction, which ran two blinded agents one after the "
        "other (shown as A and B, "
        f"the pair drawn by {study.get('pair_sampling')} pair sampling and its order at random), each from the "
        "same start scene, restored between them. An agent's point on the camera image was deprojected with "
        "aligned depth to a 3D target in the robot base frame, where the arm picked. Every answer was revealed "
        f"after a time drawn uniformly from {reveal[0]:g}-{reveal[1]:g} s. The participant then saw both "
        "before/after pairs and said which did better (A, B or about the same), scored each half's progress "
        "0-100 against written anchors, and could give a reason. An episode with an aborted half is void and "
        f"its slot was offered again, up to {study.get('max_repeats')} times. Ratings: Bradley-Terry with ties "
        "(Davidson 1970) with 95 % bootstrap intervals over episodes, on the arena scale (mean 1000); the "
        "task-aware model of RoboArena (Atreya et al. 2025, sec. 4) with the instruction's category as its "
        "bucket; progress as a mean with Student's t interval; a half with progress 75 or more "
        '("it did what was asked") counts as a success. '
        "Software: pointlab (see software.json).",
        "",
        "## Results",
        "",
        f"{pw['episodes']['compared']} compared episodes, {pw['episodes']['void']} void (not rated; their slots "
        f"were offered again), {len(pw.get('short_participants') or [])} participant(s) short of their episodes "
        "(repeats ran out).",
        "",
        "| agent | rating | 95 % CI | episodes | mean progress (95 % CI) |",
        "|---|---|---|---|---|",
    ]
    for a in sorted(ratings, key=lambda k: -ratings[k]["rating"]):
        r, prog = ratings[a], pw["progress"].get(a, {})
        ci = prog.get("ci95")
        mean = "-" if prog.get("mean") is None else f"{prog['mean']:.1f}"
        bound = f" ({r['bound']}: unbounded)" if r.get("bound") else ""
        lines.append(
            f"| {a} | {r['rating']:.0f}{bound} | {_span(r['ci_low'], r['ci_high'])} | {r['episodes']} | "
            f"{mean}{'' if ci is None else f' ({_span(ci[0], ci[1], 1)})'} |"
        )
    lines += [
        "",
        "Every number here is computed from `trials.jsonl` and `episodes.jsonl` "
        "(`pointlab.bridge.study.publish.study_numbers`); `MANIFEST.sha256` holds the checksum of every file.",
        "",
    ]
    return lines


def _readme(
    study: dict, numbers: dict, participants: list[dict], reveal: tuple[float, float], trials: list[dict]
) -> str:
    arm = _arm_words(trials)
    if "pairwise" in numbers:
        title = f"# Point-Act study {study['id']}{': ' + study['name'] if study.get('name') else ''} (pairwise)"
        return "\n".join([title, "", *_pairwise_methods(study, numbers, reveal, arm)])
    lines = [
        f"# Point-Act study {study['id']}{': ' + study['name'] if study.get('name') else ''}",
        "",
        "## Methods",
        "",
        f"{numbers['n_participants']} participants each instructed {arm} through "
        f"{len(study['agents'])} agents, {study['trials_per_agent']} trials per agent, in blocks of one agent "
        f"each; the agents were blinded (shown as Agent 1, Agent 2, ...) and their order was balanced across "
        f"participants ({study.get('design')} design). An agent's point on the camera image was deprojected "
        "with aligned depth to a 3D target in the robot base frame, where the arm picked or placed. Every "
        f"answer was revealed after a time drawn uniformly from {reveal[0]:g}-{reveal[1]:g} s, so an agent's "
        "speed did not tell it apart. After each trial the participant judged from the before/after images "
        "whether the instruction was carried out; a trial the robot refused (no point, no depth, outside the "
        "workspace) counts as failed; an aborted trial (emergency stop, a fault, a lost station) is not a "
        f"test of the agent and its slot was offered again, up to {study.get('max_repeats')} times per block. "
        "Success rates are over judged trials with 95 % Wilson score intervals (Wilson 1927). After each "
        "block the participant answered the System Usability Scale (Brooke 1996), scored 0-100. Method: "
        "PointArena (Cheng et al. 2025), sec. 3.4; software: pointlab (see software.json).",
        "",
        "## Results",
        "",
        "| agent | judged | succeeded | success | 95 % CI | automatic check | agreement (kappa) | mean SUS (n) |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f} %"

    for a in numbers["agents"]:
        ci = a["ci95"]
        kappa = "-" if a["kappa"] is None else f"{a['kappa']:.2f}"
        sus = "-" if a["mean_sus"] is None else f"{a['mean_sus']:.1f} ({a['n_surveys']})"
        lines.append(
            f"| {a['agent']} | {a['n_judged']} | {a['n_succeeded']} | {pct(a['success_rate'])} | "
            f"{'-' if ci is None else f'{100 * ci[0]:.1f}-{100 * ci[1]:.1f} %'} | {pct(a['auto_success_rate'])} | "
            f"{pct(a['agreement'])} ({kappa}) | {sus} |"
        )
    lines += [
        "",
        f"{numbers['n_trials']} trials stored; {sum(a['n_aborted'] for a in numbers['agents'])} aborted "
        f"(not counted); {len(numbers['short_blocks'])} block(s) ended short of their trials (repeats ran out).",
        "",
        "Every number here is computed from `trials.jsonl` and `surveys.jsonl` "
        "(`pointlab.bridge.study.publish.study_numbers`); `MANIFEST.sha256` holds the checksum of every file.",
        "",
    ]
    return "\n".join(lines)


def publish_study(
    store: Store,
    study_id: int,
    out: str | Path,
    *,
    recordings_dir: str | Path | None = None,
    calibration: str | Path | None = None,
) -> dict[str, Any]:
    """Write study ``study_id`` of ``store`` as a bundle in ``out`` (module docstring); returns
    ``bundle.json``'s content.

    Args:
        recordings_dir: where the study's recordings are (indexed, not copied); ``None``: the index
            lists what the rows say, without checking the files.
        calibration: the hand-eye calibration file the study ran with (copied, with its SHA-256).

    Raises:
        PublishError: unknown study, ``out`` exists and is not an empty folder, or no calibration file.
        OSError: the bundle cannot be written.
    """
    try:
        study = store.study(study_id)
    except StoreError as e:
        raise PublishError(str(e)) from e
    out = Path(out)
    if (why := not_empty(out)) is not None:
        raise PublishError(why)
    cal = Path(calibration) if calibration is not None else None
    if cal is not None and not cal.is_file():
        raise PublishError(f"calibration file {cal} does not exist")
    trials = store.trials(study_id=study_id)
    surveys = store.surveys(study_id=study_id)
    participants = store.participants(study_id)
    pairwise = study.get("mode") == "pairwise"
    episodes = store.episodes(study_id=study_id) if pairwise else None
    numbers = study_numbers(study, trials, surveys, participants, episodes)
    out.mkdir(parents=True, exist_ok=True)

    def write(rel: str, data: str | bytes) -> None:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))

    write("trials.jsonl", _jsonl(trials))
    write("surveys.jsonl", _jsonl(surveys))
    write("trials.csv", trial_log_csv(trials, participants))
    write("sus.csv", sus_csv(surveys, participants))
    write("blocks.csv", blocks_csv([] if pairwise else study_blocks(study, trials, participants)))
    if episodes is not None:
        from pointlab.bridge.study.pairwise_results import episodes_csv

        write("episodes.jsonl", _jsonl(episodes))
        write("episodes.csv", episodes_csv(episodes, trials, participants))
    people = [{k: p.get(k) for k in ("id", "label", "agent_order")} for p in participants]  # no tokens
    write("study.json", dumps_json({"study": finite_json(study), "participants": people}, indent=1))
    write(
        "results.json",
        dumps_json({"format": BUNDLE_FORMAT, "version": BUNDLE_VERSION, "study_id": study_id, **numbers}, indent=1),
    )
    write("results.csv", _results_csv(numbers["agents"]))
    (out / "plots").mkdir()
    save_figure(success_figure(numbers["agents"]), out / "plots" / "success")
    if pairwise:
        save_figure(pairwise_figure(numbers["pairwise"]), out / "plots" / "pairwise")
    else:
        save_figure(sus_figure(numbers["agents"]), out / "plots" / "sus")
    ref = store.scene_reference(study_id)
    if ref:
        write("reference/scene.jpg", ref)
    for b in store.block_starts(study_id=study_id, with_frames=True):
        if b.get("frame_jpeg"):
            write(f"reference/block-start-p{b['participant_id']}-b{b['block'] + 1}.jpg", b["frame_jpeg"])
    software = _software(trials, cal)
    if cal is not None:
        write(f"calibration/{cal.name}", cal.read_bytes())
    write("software.json", dumps_json(software, indent=1))
    rec_dir = Path(recordings_dir) if recordings_dir is not None else None
    write("recordings.json", dumps_json(_recordings(trials, rec_dir), indent=1))
    reveal = (float(study.get("reveal_low_s") or 0), float(study.get("reveal_high_s") or 0))
    write("README.md", _readme(study, numbers, participants, reveal, trials))
    return finish_bundle(out, fmt=BUNDLE_FORMAT, version=BUNDLE_VERSION, study_id=study_id)
