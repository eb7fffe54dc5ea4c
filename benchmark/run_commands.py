"""``pointlab bench run TASK``: run a model of the agents file over a static benchmark (docs/harness.md).

Built so far: ``vsibench`` and ``revsi`` (``video.run``); ``pointbench`` is ``bench pointing`` (the
same runner, journal and records; ``--questions`` is its dataset); ``pinpointqa`` and ``egopoint``
are refused with that message until their runners exist. A questions file that carries answers (an
answer key given by mistake) is refused: the answers would reach the model.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import typer

from .cli import sub
from .clikit import fail, print_json, require_items

bench_app = sub.group("bench")

TASKS = ("vsibench", "revsi", "pointbench", "pinpointqa", "egopoint")
# fields of an answer key (video generate's answers.jsonl) that a questions file never has
ANSWER_FIELDS = frozenset({"ground_truth", "answer", "count_in_scene", "gt", "target"})


@bench_app.command("run")
def bench_run_cmd(
    task: str = typer.Argument(..., help="vsibench | revsi | pinpointqa | egopoint | pointbench (as bench pointing)"),
    questions: Path = typer.Option(
        ..., "--questions", help="questions JSONL (video generate's questions.jsonl); pointbench: its dataset"
    ),
    model: str = typer.Option(..., "--model", help="agent name in the agents file"),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: the packaged sim agents)"),
    video: Optional[Path] = typer.Option(None, "--video", help="the video or frame folder every question is about"),
    videos: Optional[Path] = typer.Option(
        None, "--videos", help="folder of videos laid out as lmms-eval's <dataset>/<scene_name>.mp4"
    ),
    images: Optional[Path] = typer.Option(
        None, "--images", help="egopoint: the folder the entries' image_path values are relative to"
    ),
    budget: Optional[str] = typer.Option(
        None,
        "--budget",
        help="frames per question: a number or 'all' (questions' own frames win; default 16, pinpointqa 64)",
    ),
    sampler: Optional[str] = typer.Option(
        None, "--sampler", help="frame sampler for --budget (default nested, pinpointqa uniform)"
    ),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="only the first N questions"),
    concurrency: int = typer.Option(4, "--concurrency", min=1, max=256, help="requests in flight"),
    max_error_rate: float = typer.Option(
        0.1, "--max-error-rate", min=0.0, max=1.0, help="stop (exit 1) past this share of failed answers"
    ),
    answers: Optional[Path] = typer.Option(
        None, "--answers", help="answer key (answers.jsonl): score the run at the end"
    ),
    rules: str = typer.Option("pointlab", "--rules", help="rule set of the score at the end"),
    lmms_results: Optional[Path] = typer.Option(
        None, "--lmms-results", help="also write the score in lmms-eval's results form here (needs --answers)"
    ),
    out: Path = typer.Option(..., "--out", help="run folder (run.json, run_1.jsonl): a rerun resumes it"),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Ask a model every question of a static benchmark with N requests in flight, journal each answer
    (a rerun resumes without asking twice), and score the run when --answers is given.

    vsibench, revsi: --video or --videos, --budget (16), --sampler (nested), --limit, --answers,
    --lmms-results. pinpointqa: the same, --budget 64 --sampler uniform by default, no --lmms-results
    (score pinpoint writes it). pointbench: --questions is the dataset; runs `bench pointing` (3 runs;
    no --video, --videos, --answers, --limit, --lmms-results)."""
    from .agents_config import SIM_BASE_URL, AgentsConfigError, build_agent, model_agent_config
    from .records import RecordError, read_jsonl
    from .runner import ErrorRateExceeded
    from .scorers import check_rules, get_scorer
    from .video.errors import VideoBenchError
    from .video.run import file_sha256, run_vsi
    from .video.sampling import SAMPLERS, parse_budget

    if task not in TASKS:
        fail(f"unknown task {task!r}; bench run runs vsibench, revsi and pointbench")
    if task == "pointbench":
        for opt, given in (
            ("--video", video),
            ("--videos", videos),
            ("--answers", answers),
            ("--limit", limit),
            ("--lmms-results", lmms_results),  # (bench pointing writes lmms_results.json in its run folder)
        ):
            if given is not None:
                fail(f"{opt} is not an option of pointbench (its dataset holds the masks it is scored with)")
        from .pointbench_commands import bench_pointing_cmd

        # the same command, called with every option it has (its defaults: 3 runs, as PointArena)
        bench_pointing_cmd(
            data=questions,
            model=model,
            agents=agents,
            runs=3,
            prompt_style=None,
            steer="describe",
            concurrency=concurrency,
            max_error_rate=max_error_rate,
            rules=rules,
            out=out,
            progress=progress,
        )
        return
    if task == "egopoint":
        _run_egopoint(questions, model, agents, images, limit, concurrency, max_error_rate, rules, out, progress)
        return
    if images is not None:
        fail("--images is for egopoint; video tasks take --video or --videos")
    from .pinpoint import run as pinpoint_run

    pinpoint = task == "pinpointqa"
    if budget is None:
        budget = str(pinpoint_run.BUDGET) if pinpoint else "16"
    if sampler is None:
        sampler = pinpoint_run.SAMPLER if pinpoint else "nested"
    if lmms_results is not None and pinpoint:
        fail("--lmms-results for pinpointqa: use `pointlab score pinpoint --lmms-results` on the run's journal")
    if not math.isfinite(max_error_rate):
        fail("--max-error-rate must be a number from 0 to 1")
    if lmms_results is not None and answers is None:
        fail("--lmms-results needs --answers (a run is scored against the answer key)")
    try:
        check_rules(rules)
        b = parse_budget(budget)
        if sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {sampler!r}; choose from {sorted(SAMPLERS)}")
        if (video is None) == (videos is None):
            raise ValueError("give --video (one video for every question) or --videos (a folder of them)")
        for opt, path in (("--video", video), ("--videos", videos)):
            if path is not None and not path.exists():
                raise ValueError(f"{opt} {path}: no such file or folder")
        if videos is not None and not videos.is_dir():
            raise ValueError(f"--videos {videos}: not a folder")
        qs = read_jsonl(questions)
        require_items(qs, questions)
        if limit is not None:
            qs = qs[:limit]
        if any("id" not in q or "question" not in q for q in qs):
            raise ValueError(f"{questions}: every question needs 'id' and 'question'")
        leaked = sorted({k for q in qs for k in q} & ANSWER_FIELDS)
        if leaked:
            raise ValueError(
                f"{questions} carries answers ({', '.join(leaked)}): it is an answer key, not a questions file; "
                "give video generate's questions.jsonl (the key goes to --answers)"
            )
        key = read_jsonl(answers) if answers is not None else None
        cfg = model_agent_config(agents, model)
        if cfg.base_url == SIM_BASE_URL and key is None:
            raise ValueError(f"agent {model!r} is a sim model: it answers from the answer key, give --answers")
    except (RecordError, AgentsConfigError, VideoBenchError, ValueError) as e:
        fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
    if video is not None:  # (after every check: a refused run prints its one error line only)
        _warn_scene_mismatch(video, qs, "scene_id" if pinpoint else "scene_name")
    # base_url = "sim": the sim model server answers from the answer key (a test double, reached only
    # through the sim_models registry)
    from .sim_models import SimModelsUnavailable, sim_server_for

    try:
        sim_url, stop = sim_server_for(cfg, "qa", key)
    except SimModelsUnavailable as e:
        fail(str(e), 1)
    agent = build_agent(cfg, sim_base_url=sim_url)
    record: dict[str, Any] = {"dataset": str(questions.resolve()), "questions_sha256": file_sha256(questions)}
    record.update(task=task, agent=cfg.model_dump(exclude={"api_key_env"}))
    try:
        res = run_vsi(
            qs,
            agent,
            out,
            video=video,
            videos=videos,
            budget=b,
            sampler=sampler,
            concurrency=concurrency,
            max_error_rate=max_error_rate,
            progress=progress,
            record=record,
            benchmark=task,
            prompt_of=pinpoint_run.pinpoint_prompt if pinpoint else None,
            video_of=pinpoint_run.pinpoint_video if pinpoint else None,
        )
    except ErrorRateExceeded as e:
        fail(str(e), 1)
    except ValueError as e:
        fail(str(e))
    finally:
        if stop is not None:
            stop()
    doc: dict = {"task": task, "model": model, "out": str(out), **res}
    if key is not None:
        from .records import read_predictions

        # the questions this run asked (all, or the first --limit): `score vsi` on the journal with the
        # same key gives the same numbers when the run asked every question of the key
        asked = {str(q["id"]) for q in qs}
        key = [k for k in key if str(k.get("id")) in asked]
        # (pinpointqa: FSD needs an LLM judge and is left unscored here: `pointlab score pinpoint --judge`)
        scorer = "pinpoint" if pinpoint else "vsi"
        report = get_scorer(scorer)(key, read_predictions(out / "run_1.jsonl"), rules=rules)
        doc["score"] = report.to_dict()["summary"]
        doc["scores_file"] = str(write_scores(out, scorer, key, rules))
        if lmms_results is not None:
            from .video_commands import write_vsi_lmms

            try:
                write_vsi_lmms(lmms_results, report, rules)
            except OSError as e:
                fail(f"--lmms-results {lmms_results}: {e}", 1)
            doc["lmms_results"] = str(lmms_results)
    print_json(doc)


def _run_egopoint(questions, model, agents, images, limit, concurrency, max_error_rate, rules, out, progress) -> None:
    """``bench run egopoint`` (benchmark/egopoint/run.py): the released array's entries, scored at the
    end with the same file (it is the released test set, answers included; the prompt never has them).
    Open-ended answers need the judge: unscored here, ``pointlab score egopoint --judge`` scores them."""
    from .agents_config import SIM_BASE_URL, AgentsConfigError, build_agent, model_agent_config
    from .egopoint.run import run_egopoint
    from .egopoint.scoring import release_records
    from .lmms import load_json_or_jsonl
    from .records import RecordError, read_predictions
    from .runner import ErrorRateExceeded
    from .scorers import check_rules, get_scorer
    from .video.run import file_sha256

    try:
        check_rules(rules)
        if images is None or not images.is_dir():
            raise ValueError("egopoint needs --images: the folder its entries' image_path values are relative to")
        good, bad = load_json_or_jsonl(questions)
        if bad:
            raise RecordError(bad[0])
        entries = release_records([r for _, r in good])
        require_items(entries, questions)
        if limit is not None:
            entries = entries[:limit]
        cfg = model_agent_config(agents, model)
        if cfg.base_url == SIM_BASE_URL:
            raise ValueError(f"agent {model!r} is a sim model; the sim agents do not answer egopoint questions")
    except (RecordError, AgentsConfigError, ValueError) as e:
        fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
    agent = build_agent(cfg)
    record: dict[str, Any] = {"dataset": str(questions.resolve()), "questions_sha256": file_sha256(questions)}
    record.update(task="egopoint", agent=cfg.model_dump(exclude={"api_key_env"}))
    try:
        res = run_egopoint(
            entries,
            agent,
            out,
            images=images,
            concurrency=concurrency,
            max_error_rate=max_error_rate,
            progress=progress,
            record=record,
        )
    except ErrorRateExceeded as e:
        fail(str(e), 1)
    except ValueError as e:
        fail(str(e))
    report = get_scorer("egopoint")(entries, read_predictions(out / "run_1.jsonl"), rules=rules)
    scores = write_scores(out, "egopoint", entries, rules)
    doc = {"task": "egopoint", "model": model, "out": str(out), **res, "score": report.to_dict()["summary"]}
    print_json({**doc, "scores_file": str(scores)})


def write_scores(out: Path, scorer: str, key: list, rules: str) -> Path:
    """``scores.json`` of a run folder: the run's journal scored under both rule sets
    (``{"scorer", "rules_printed", "pointlab": summary, "reference": summary}``), so a reader sees what
    the choice of rules changes; ``pointlab score`` reproduces either from ``run_1.jsonl``."""
    from .records import dumps_json, read_predictions
    from .scorers import RULE_SETS, get_scorer

    preds = read_predictions(out / "run_1.jsonl")
    doc: dict[str, Any] = {"scorer": scorer, "rules_printed": rules}
    for name in RULE_SETS:
        doc[name] = get_scorer(scorer)(key, preds, rules=name).to_dict()["summary"]
    path = out / "scores.json"
    path.write_text(dumps_json(doc, indent=1) + "\n", encoding="utf-8")
    return path


def _warn_scene_mismatch(video: Path, questions: list, field: str) -> None:
    """One warning line on stderr when ``--video`` (one video for every question) is named after none
    of the scenes the questions are about: the model would answer about the wrong room."""
    scenes = sorted({str(q[field]) for q in questions if q.get(field)})
    names = {video.name, video.stem, video.parent.name}
    if scenes and not names & set(scenes):
        shown = ", ".join(scenes[:3]) + (" ..." if len(scenes) > 3 else "")
        typer.echo(f"warning: --video {video} is named after none of the questions' scenes ({shown})", err=True)
