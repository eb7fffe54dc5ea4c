"""CLI of PinpointQA: ``pointlab pinpoint generate``, ``pointlab score pinpoint``,
``pointlab score localization``, ``pointlab perf pinpoint`` (the study page, ``pinpoint study``, is in
``pointlab.ui.cli``). Thin: parse, call one library
function, print its JSON, map library errors to exit codes (2 bad input, 1 runtime failure)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .cli import sub
from .clikit import SEED_MAX, fail, print_json, require_items

perf_app, pinpoint_app, score_app = sub.group("perf"), sub.group("pinpoint"), sub.group("score")


@score_app.command("pinpoint")
def score_pinpoint_cmd(
    gt: Path = typer.Option(
        ..., "--gt", help="ground truth: the released test.jsonl, or a gt_dir of <scene>.json with qa_pairs"
    ),
    pred: Path = typer.Option(
        ..., "--pred", help='predictions JSONL {"id", "prediction"}, or the released pred_dir of <scene>.json'
    ),
    rules: str = typer.Option(
        "pointlab",
        "--rules",
        help="reference (the authors' released evaluator, item for item) | pointlab (default; docs/scoring.md)",
    ),
    judge: Optional[str] = typer.Option(
        None,
        "--judge",
        help="FSD judge model (OpenAI-compatible; the authors used gpt-5.4); omit to leave FSD unscored",
    ),
    judge_base_url: Optional[str] = typer.Option(
        None, "--judge-base-url", help="judge server URL ending in /v1 (default $OPENAI_BASE_URL)"
    ),
    lmms_results: Optional[Path] = typer.Option(
        None, "--lmms-results", help="also write Micro / Macro per task in lmms-eval's results form"
    ),
) -> None:
    """Score PinpointQA predictions: {"items": [{id, value, parsed, reason, metadata}], "summary": {Micro/Macro per task}}."""
    from .lmms import results_form, write_results
    from .pinpoint.fsd import fsd_judge
    from .pinpoint.scoring import PinpointScoreError, load_ground_truth, load_predictions
    from .scorers import check_rules, get_scorer

    try:
        check_rules(rules)
        gt_recs, preds = load_ground_truth(gt), load_predictions(pred)
        require_items(gt_recs, gt)
        j = fsd_judge(judge, base_url=judge_base_url) if judge else None
        report = get_scorer("pinpoint")(gt_recs, preds, rules=rules, judge=j)
    except (PinpointScoreError, ValueError) as e:
        fail(str(e))
    if lmms_results is not None:
        t = report.summary["tasks"]
        metrics = {f"{task}_{kind}": t[task][kind] for task in t for kind in ("micro", "macro")}
        metrics.update({"avg_micro": report.summary["avg_micro"], "avg_macro": report.summary["avg_macro"]})
        write_results(
            lmms_results,
            [results_form("pinpointqa", metrics, n=report.summary["n_items"], rules=rules, scorer="pinpoint")],
        )
    print_json(report.to_dict())


@score_app.command("localization")
def score_localization_cmd(
    gt: Path = typer.Option(..., "--gt", help='annotations JSONL, {"id", "frame_index", "x", "y"} (x, y normalized)'),
    pred: Path = typer.Option(..., "--pred", help='responses JSONL, {"id", "frame_index", "x", "y"[, "elapsed_s"]}'),
) -> None:
    """Human localization score of PinpointQA App. D (wrong frame 0, else max(0, 1 - (d/0.12)^2))."""
    from .pinpoint.localization import LocalizationRecordError
    from .records import RecordError, read_jsonl, read_jsonl_lenient
    from .scorers import get_scorer

    try:
        responses, unreadable = read_jsonl_lenient(pred)  # one bad response line never stops the run
        gt_recs = read_jsonl(gt)
        require_items(gt_recs, gt)
        report = get_scorer("localization")(gt_recs, [r for _, r in responses])
    except (RecordError, LocalizationRecordError) as e:
        fail(str(e))
    report.summary["unreadable_prediction_lines"] = unreadable
    print_json(report.to_dict())


@pinpoint_app.command("generate")
def pinpoint_generate_cmd(
    scenes: list[Path] = typer.Option(
        ...,
        "--scenes",
        help="scene files or folders (VSI-Bench meta, ReVSI boxes, ScanNet, ScanNet++); repeat the option",
    ),
    out: Path = typer.Option(
        ..., "--out", help="output folder (train/val/test.jsonl, representations.jsonl, summary.json)"
    ),
    seed: int = typer.Option(
        0, "--seed", min=0, max=SEED_MAX, help="seed of negatives, distractors, answer letters and the split"
    ),
    sources: Optional[str] = typer.Option(
        None, "--sources", help="comma-separated source datasets to keep, e.g. scannet,scannetpp"
    ),
) -> None:
    """Generate TPV / NRI / FSD / SSP questions from 3D scenes; prints the summary (counts per task, source, split)."""
    from .pinpoint.dataset import generate_dataset
    from .scenes import SceneFormatError

    keep = {s.strip() for s in sources.split(",") if s.strip()} if sources else None
    try:
        summary = generate_dataset(scenes, out, seed=seed, sources=keep)
    except SceneFormatError as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write {out}: {e}", 1)
    print_json(summary)


@perf_app.command("pinpoint")
def perf_pinpoint_cmd(
    objects: int = typer.Option(300, "--objects", help="objects in the synthetic mesh scene"),
    vertices: int = typer.Option(1_000_000, "--vertices", help="total vertices of the synthetic scene"),
    repeat: int = typer.Option(3, "--repeat", help="generation runs (cold caches each time)"),
    ssp_answers: int = typer.Option(10_000, "--ssp-answers", help="SSP answers to score"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX),
) -> None:
    """Generation time on a 300-object / 1M-vertex scene (KD-tree vs naive all-pairs baseline) and SSP scoring
    throughput (vs json.loads); percentiles and ratios."""
    from .pinpoint.perf import perf_pinpoint

    if objects < 10 or vertices < 10 * objects or repeat < 1 or ssp_answers < 1:
        fail("need --objects >= 10, --vertices >= 10 per object, --repeat >= 1, --ssp-answers >= 1")
    print_json(perf_pinpoint(n_objects=objects, n_vertices=vertices, repeat=repeat, ssp_answers=ssp_answers, seed=seed))
