"""CLI of the video spatial tasks and EgoPoint-Bench: ``pointlab video frames|generate``,
``pointlab score vsi|egopoint``, ``pointlab perf video``. Thin: parse, call one library function,
print its JSON, map library errors to exit codes (2 bad input, 1 runtime failure)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from .cli import sub
from .clikit import SEED_MAX, fail, print_json, require_items

perf_app, score_app, video_app = sub.group("perf"), sub.group("score"), sub.group("video")


RULES_HELP = "reference (the authors' released evaluator, item for item) | pointlab (default; docs/scoring.md)"


def _gt_and_predictions(gt: Path | None, pred: Path):
    """Ground truth (JSONL, a JSON array, or the docs of an lmms-eval samples log) and predictions
    (``{"id", "prediction"}`` JSONL or an lmms-eval samples log); one bad prediction line never stops a run."""
    from .lmms import is_samples_log, load_json_or_jsonl, samples_ground_truth, samples_predictions
    from .records import RecordError, predictions_from_records

    pred_recs, bad = load_json_or_jsonl(pred)
    from_log = is_samples_log(pred_recs[:1])
    if gt is None:
        if not from_log:
            raise RecordError(
                "--gt is needed unless --pred is an lmms-eval samples log (its docs hold the ground truth)"
            )
        gt_recs = samples_ground_truth(pred_recs)
    else:
        good, gt_bad = load_json_or_jsonl(gt)
        if gt_bad:
            raise RecordError(gt_bad[0])
        gt_recs = samples_ground_truth(good) if is_samples_log(good[:1]) else [r for _, r in good]
        if not from_log and any(isinstance(r.get("id"), type(None)) for r in gt_recs):
            # released arrays without ids: the position is the id
            gt_recs = [dict(r, id=r.get("id", i)) for i, r in enumerate(gt_recs)]
    preds = (
        samples_predictions(pred_recs, unreadable=bad)
        if from_log
        else predictions_from_records(pred_recs, unreadable=bad)
    )
    return gt_recs, preds


@score_app.command("vsi")
def score_vsi_cmd(
    gt: Path | None = typer.Option(
        None, "--gt", help="ground truth: JSONL, a JSON array (VSI-Bench, ReVSI), or an lmms-eval samples log"
    ),
    pred: Path = typer.Option(
        ..., "--pred", help='predictions JSONL {"id", "prediction"}, or an lmms-eval samples log'
    ),
    rules: str = typer.Option("pointlab", "--rules", help=RULES_HELP),
    lmms_results: Path | None = typer.Option(
        None, "--lmms-results", help="also write the scores in lmms-eval's results form here"
    ),
) -> None:
    """Score VSI-Bench / ReVSI predictions: {"items": [{id, value, parsed, reason, metadata}], "summary": {...}}."""
    from .records import RecordError
    from .scorers import check_rules, get_scorer
    from .video.errors import VideoBenchError

    try:
        check_rules(rules)
        gt_recs, preds = _gt_and_predictions(gt, pred)
        require_items(gt_recs, gt or pred)
        report = get_scorer("vsi")(gt_recs, preds, rules=rules)
    except (VideoBenchError, RecordError, ValueError) as e:
        fail(str(e))
    if lmms_results is not None:
        write_vsi_lmms(lmms_results, report, rules)
    print_json(report.to_dict())


def write_vsi_lmms(path: Path, report, rules: str) -> None:
    """A VSI-Bench / ReVSI score ``report`` in lmms-eval's results form at ``path`` (``score vsi`` and
    ``bench run vsibench`` write the same file)."""
    from .lmms import results_form, write_results
    from .video.scoring import lmms_results as vsi_lmms

    summary = {**report.summary, "rules": rules}
    forms = [
        results_form(task, m, n=report.summary["n_questions"], rules=rules, scorer="vsi")
        for task, m in vsi_lmms(summary)
    ]
    write_results(path, forms)


@video_app.command("frames")
def video_frames_cmd(
    video: Path = typer.Option(..., "--video", help="video file (mp4, mov, ...) or folder of frames"),
    budget: str = typer.Option("all", "--budget", help="number of frames or 'all'"),
    sampler: str = typer.Option("nested", "--sampler", help="nested (ReVSI 64/32/16), uniform or all"),
    dummy: str = typer.Option("", "--dummy", help="query_dropped, first_frame_repeated or black"),
    visibility: Path | None = typer.Option(None, "--visibility", help="visibility table JSON (query_dropped)"),
    query: str = typer.Option("", "--query", help="comma-separated object ids or labels (query_dropped)"),
) -> None:
    """Print {"frames": [indices], "total": n, "sampler": name, "budget": b, "num_frames": k}.

    With --dummy, "frames" lists the source frame of each dummy frame (null = black).
    """
    from .video.dummy import make_dummy
    from .video.errors import VideoBenchError
    from .video.frames import open_frames
    from .video.sampling import sample_frames
    from .video.visibility import VisibilityTable

    try:
        with open_frames(video) as src:
            sel = sample_frames(src.total, budget, sampler)
        out = {
            "frames": list(sel.indices),
            "total": sel.total,
            "sampler": sel.sampler,
            "budget": sel.budget,
            "num_frames": sel.num_frames,
        }
        if dummy:
            table = VisibilityTable.load(visibility) if visibility else None
            refs = [q.strip() for q in query.split(",") if q.strip()]
            d = make_dummy(dummy, sel, visibility=table, query_objects=refs)
            out.update({"dummy": d.kind, "frames": list(d.slots), "num_frames": len(d.slots), "query_objects": refs})
    except (VideoBenchError, ValueError) as e:
        fail(str(e))
    print_json(out)


def _egopoint_inputs(gt: Path, pred: Path):
    """EgoPoint ground truth (JSONL or the released JSON array) and predictions (JSONL, or the playground's
    results file with ``details``)."""
    from .egopoint.scoring import release_predictions, release_records
    from .lmms import load_json_or_jsonl
    from .records import RecordError, predictions_from_records

    good, bad = load_json_or_jsonl(gt)
    if bad:
        raise RecordError(bad[0])
    gt_recs = release_records([r for _, r in good])
    text = pred.read_text(encoding="utf-8-sig") if pred.is_file() else ""
    if text.lstrip().startswith("{") and '"details"' in text[:2_000_000]:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and "details" in doc:
            out = predictions_from_records(release_predictions(doc))
            return gt_recs, out
    recs, bad = load_json_or_jsonl(pred)
    return gt_recs, predictions_from_records(recs, unreadable=bad)


@score_app.command("egopoint")
def score_egopoint_cmd(
    gt: Path = typer.Option(
        ..., "--gt", help="EgoPoint ground truth: the released JSON array (pure_real_test.json) or JSONL"
    ),
    pred: Path = typer.Option(
        ..., "--pred", help='predictions JSONL {"id", "prediction"}, or the playground results file (details)'
    ),
    rules: str = typer.Option("pointlab", "--rules", help=RULES_HELP),
    judge: str | None = typer.Option(
        None,
        "--judge",
        help="open-ended judge model (OpenAI-compatible; the paper used GPT-4o); omit to use stored verdicts only",
    ),
    judge_base_url: str | None = typer.Option(None, "--judge-base-url", help="judge server URL ending in /v1"),
    verdicts: Path | None = typer.Option(
        None, "--verdicts", help="JSONL of stored judge verdicts: read, and new ones appended"
    ),
    lmms_results: Path | None = typer.Option(
        None, "--lmms-results", help="also write the scores in lmms-eval's results form here"
    ),
) -> None:
    """Score EgoPoint-Bench predictions: TF/SCQ exact match, OQ judge 0..1 in steps of 0.2 (pointlab); tables per
    dimension, deixis level, question type and domain with the random baseline."""

    from .records import RecordError, read_jsonl
    from .scorers import check_rules, get_scorer
    from .video.errors import VideoBenchError

    try:
        check_rules(rules)
        stored = {str(r["id"]): r for r in read_jsonl(verdicts) if "id" in r} if verdicts and verdicts.exists() else {}
        j = None
        if judge and rules == "pointlab":
            from .judge import LLMJudge

            j = LLMJudge(judge, base_url=judge_base_url)
        gt_recs, preds = _egopoint_inputs(gt, pred)
        require_items(gt_recs, gt)
        sink = verdicts.open("a", encoding="utf-8") if verdicts and j else None
        try:
            report = get_scorer("egopoint")(
                gt_recs,
                preds,
                rules=rules,
                judge=j,
                verdicts=stored,
                on_verdict=(lambda r: sink.write(json.dumps(r) + "\n")) if sink else None,
            )
        finally:
            if sink:
                sink.close()
    except (VideoBenchError, RecordError, ValueError) as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write verdicts: {e}", 1)
    if lmms_results is not None:
        write_egopoint_lmms(lmms_results, report, rules)
    print_json(report.to_dict())


def write_egopoint_lmms(path: Path, report, rules: str) -> None:
    """An EgoPoint-Bench score in lmms-eval's results form: task ``egopoint`` with ``accuracy`` (the
    overall score over the scored items) and ``accuracy_<question type>`` (TF, SCQ, OQ), in 0..1."""
    from .lmms import results_form, write_results

    s = report.summary
    metrics = {"accuracy": s["overall"]["score"]}
    metrics.update({f"accuracy_{t.lower()}": cell["score"] for t, cell in s["question_type"].items()})
    write_results(path, [results_form("egopoint", metrics, n=s["overall"]["n"], rules=rules, scorer="egopoint")])


@video_app.command("generate")
def video_generate_cmd(
    scenes: Path = typer.Option(..., "--scenes", help="scene file or folder (VSI-Bench meta, ReVSI boxes)"),
    out: Path = typer.Option(
        ..., "--out", help="output folder: questions.jsonl (no answers), answers.jsonl (the answer key), report.json"
    ),
    budgets: str = typer.Option("16,32,64,all", "--budgets", help="comma-separated frame budgets"),
    frames: Path | None = typer.Option(None, "--frames", help="the video or frame folder of --scene-id"),
    visibility: Path | None = typer.Option(None, "--visibility", help="visibility table of those frames"),
    scene_id: str | None = typer.Option(None, "--scene-id", help="only this scene (required with --frames)"),
    sampler: str = typer.Option("nested", "--sampler", help="frame sampler for the budgets"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="seed of every random choice"),
    vsibench_filters: bool = typer.Option(
        False, "--vsibench-filters", help="VSI-Bench's thresholds instead of ReVSI's"
    ),
) -> None:
    """Generate VSI-Bench / ReVSI questions from 3D boxes; with --frames and --visibility, one record per
    answerable (question, budget). Prints the counts per task and per filter."""
    from .scenes import SceneFormatError, load_scenes
    from .video.errors import VideoBenchError
    from .video.frames import open_frames
    from .video.generate import GenerationConfig, expand_budgets, generate_questions
    from contextlib import ExitStack

    from .records import question_view, replaced_on_success, write_jsonl
    from .video.generate import QUESTION_FIELDS
    from .video.sampling import SAMPLERS, parse_budget
    from .video.visibility import VisibilityTable

    try:
        wanted = [parse_budget(b.strip()) for b in budgets.split(",") if b.strip()]
        if not wanted:  # an empty list would write an empty questions.jsonl over the last one
            raise ValueError(f"--budgets names no budget: {budgets!r}")
        if sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {sampler!r}; choose from {sorted(SAMPLERS)}")
        if (frames is None) != (visibility is None):
            raise ValueError("--frames and --visibility go together")
        if frames is not None and not scene_id:
            raise ValueError("--frames needs --scene-id (the scene the frames show)")
        all_scenes = load_scenes(scenes)
        chosen = [s for s in all_scenes if scene_id is None or s.scene_id == scene_id]
        if not chosen:
            raise ValueError(f"no scene {scene_id!r} in {scenes}")
        cfg = GenerationConfig.vsibench(seed) if vsibench_filters else GenerationConfig(seed=seed)
        questions, report = generate_questions(chosen, cfg)
        total = None
        table = None
        if frames is not None and visibility is not None:  # (together or neither: checked above)
            with open_frames(frames) as src:
                total = src.total
            table = VisibilityTable.load(visibility)
        records, per_budget = expand_budgets(
            questions, wanted, total_frames=total, visibility=table, sampler=sampler, config=cfg
        )
        summary = {
            "questions_file": str(out / "questions.jsonl"),
            "answers_file": str(out / "answers.jsonl"),
            "records": len(records),
            "generation": report.to_dict(),
            "budgets": per_budget,
            "config": {"seed": seed, "filters": "vsibench" if vsibench_filters else "revsi", "sampler": sampler},
        }
        out.mkdir(parents=True, exist_ok=True)
        with ExitStack() as stack:  # all three written before any is renamed into place
            write_jsonl(stack.enter_context(replaced_on_success(out / "answers.jsonl")), records)
            questions = [question_view(r, QUESTION_FIELDS) for r in records]
            write_jsonl(stack.enter_context(replaced_on_success(out / "questions.jsonl")), questions)
            report_tmp = stack.enter_context(replaced_on_success(out / "report.json"))
            report_tmp.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    except (VideoBenchError, SceneFormatError, ValueError) as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write {out}: {e}", 1)
    print_json(summary)


@perf_app.command("video")
def perf_video_cmd(
    duration_s: float = typer.Option(300.0, "--duration-s", help="length of the synthetic video"),
    fps: int = typer.Option(30, "--fps"),
    width: int = typer.Option(320, "--width"),
    height: int = typer.Option(240, "--height"),
    gop: int = typer.Option(30, "--gop", help="key-frame interval, frames"),
    budgets: str = typer.Option("16,32,64", "--budgets"),
    repeats: int = typer.Option(3, "--repeats"),
    keep: Path | None = typer.Option(None, "--keep", help="write the synthetic video here instead of a temp folder"),
) -> None:
    """Frames decoded and sampled per second for a synthetic video: seeking per budget frame vs the
    in-run baseline of decoding every frame; percentiles and ratios."""
    from .video.errors import VideoBenchError
    from .video.perf import run_video_perf

    try:
        try:
            b = [int(x) for x in budgets.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--budgets must be comma-separated integers, got {budgets!r}") from None
        if not b or min(b) < 1 or not duration_s > 0 or fps < 1 or repeats < 1 or width % 2 or height % 2:
            raise ValueError("budgets, duration, fps and repeats must be positive; width and height even")
        if not math.isfinite(duration_s) or duration_s * fps < 1:
            raise ValueError(f"--duration-s {duration_s} at {fps} fps gives no whole frame (or no end)")
        if gop < 1:
            raise ValueError(f"--gop (key-frame interval) must be >= 1 frame, got {gop}")
        result = run_video_perf(duration_s, fps, width, height, gop, b, repeats, keep)
    except ValueError as e:
        fail(str(e))
    except VideoBenchError as e:
        fail(str(e), 1)
    except OSError as e:  # --keep in a folder that does not exist or cannot be written
        fail(f"cannot write the synthetic video: {e}", 1)
    print_json(result)
