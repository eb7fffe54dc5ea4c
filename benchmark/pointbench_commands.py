"""Point-Bench and Point-Battle commands: ``pointlab score pointing``, ``pointlab bench pointing``,
``pointlab bench build-dataset``, ``pointlab bench report``,
``pointlab bench crossstage``, ``pointlab ratings`` and ``pointlab perf score``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .cli import sub
from .clikit import SEED_MAX, fail, print_json, require_items

app, bench_app, perf_app, score_app = sub.root, sub.group("bench"), sub.group("perf"), sub.group("score")


RULES_HELP = "reference (the authors' released evaluator, item for item) | pointlab (default; docs/scoring.md)"


def _lmms_point_predictions(path: Path, items, fmt: str | None):
    """An lmms-eval pointbench sample log as PRED: each sample's doc matched to an item by data.json row
    (``question_id``) when the items are a release, else by image basename and query."""
    from pointlab.benchmark.lmms import read_samples_log, sample_text
    from pointlab.benchmark.pointbench import Prediction
    from pointlab.benchmark.records import Predictions

    samples, bad = read_samples_log(path)
    fmt = fmt or ("qwen3" if "pointbench_json" in path.name else "grid1000")
    by_name = {(Path(str(getattr(it.image, "name", it.image))).name, it.query.strip()): it.id for it in items}
    out = Predictions()
    out.unreadable.extend(bad)
    for where, rec in samples:
        doc = rec["doc"]
        qid = doc.get("question_id", rec.get("doc_id"))
        iid = by_name.get((str(doc.get("image_filename", "")), str(doc.get("user_input", "")).strip()))
        if iid is None and isinstance(qid, int) and 0 <= qid < len(items):
            iid = items[qid].id
        if iid is None:
            out.unreadable.append(f"{where}: no item for image {doc.get('image_filename')!r}")
            continue
        out[iid] = Prediction(iid, prediction=sample_text(rec) or "", format=fmt)
    return out


@score_app.command("pointing")
def score_pointing_cmd(
    gt: Path = typer.Option(
        ..., "--gt", help="data.json (release: folders or the Hugging Face zips), a release folder, or GT JSONL"
    ),
    pred: Path = typer.Option(
        ...,
        "--pred",
        help="PRED JSONL {id, prediction, format} / {id, points}, a run_<k>.jsonl, or an lmms-eval samples log",
    ),
    rules: str = typer.Option("pointlab", "--rules", help=RULES_HELP),
    lmms_format: Optional[str] = typer.Option(
        None, "--lmms-format", help="point format of an lmms-eval log (default grid1000; qwen3 for pointbench_json)"
    ),
    lmms_results: Optional[Path] = typer.Option(
        None, "--lmms-results", help="also write the scores in lmms-eval's results form here"
    ),
) -> None:
    """Score predictions against masks (PointArena sec. 3.1, 4.1) from their raw text. Prints {"items", "summary"}."""
    from pointlab.benchmark.lmms import is_samples_log, results_form, write_results
    from pointlab.benchmark.pointbench import DatasetError, load_dataset, load_pred_jsonl
    from pointlab.benchmark.points import POINT_FORMATS
    from pointlab.benchmark.records import RecordError, read_jsonl_lenient
    from pointlab.benchmark.scorers import check_rules, get_scorer

    try:
        check_rules(rules)
        if lmms_format is not None and (lmms_format not in POINT_FORMATS or lmms_format == "auto"):
            raise ValueError(
                f"--lmms-format: unknown point format {lmms_format!r}; use one of {', '.join(POINT_FORMATS)}"
            )
        items = load_dataset(gt)
        head, _ = read_jsonl_lenient(pred)
        preds = _lmms_point_predictions(pred, items, lmms_format) if is_samples_log(head[:1]) else load_pred_jsonl(pred)
    except (DatasetError, RecordError, ValueError) as e:
        fail(str(e))
    require_items(items, gt)
    # a mask that cannot be read or has the wrong size is a ground-truth error (exit 2), not a model
    # failure that lowers the accuracy: every item's masks are read before scoring (they are cached)
    for it in items:
        try:
            it.target_mask()
            it.load_instance_masks()
        except DatasetError as e:
            fail(f"{it.id}: {e}")
    report = get_scorer("pointing")(items, preds, rules=rules)
    if lmms_results is not None:
        write_results(
            lmms_results,
            [results_form("pointbench", report.summary["lmms_eval"], n=len(items), rules=rules, scorer="pointing")],
        )
    print_json(report.to_dict())


@bench_app.command("build-dataset")
def build_dataset_cmd(
    src: Path = typer.Option(..., "--src", help="folder holding the images and masks"),
    queries: Path = typer.Option(
        ..., "--queries", help="JSONL {image, query, category, mask | instance_masks, count?, reference_points_px?}"
    ),
    out: Path = typer.Option(..., "--out", help="output folder (release layout + gt.jsonl)"),
) -> None:
    """Check images, masks and queries and write a Point-Bench dataset. Prints a summary."""
    from collections import Counter

    from pointlab.benchmark.pointbench import DatasetError
    from pointlab.benchmark.pointbench.build import build_dataset

    try:
        items = build_dataset(src, queries, out)
    except DatasetError as e:
        fail(str(e))
    print_json(
        {
            "out": str(out),
            "items": len(items),
            "categories": dict(Counter(i.category for i in items)),
            "gt": str(out / "gt.jsonl"),
        }
    )


@bench_app.command("pointing")
def bench_pointing_cmd(
    data: Path = typer.Option(
        ..., "--data", help="dataset: release folder or data.json (folders or zips), GT JSONL, or folder with gt.jsonl"
    ),
    model: str = typer.Option(..., "--model", help="agent name in the agents config"),
    agents: Optional[Path] = typer.Option(None, "--agents", help="agents TOML (default: the embedded sim agents)"),
    runs: int = typer.Option(3, "--runs", min=1, help="independent runs (PointArena: 3)"),
    prompt_style: Optional[str] = typer.Option(
        None, "--prompt-style", help="default | two_shot | cot | unparsed (Table 1); default: the agent's"
    ),
    steer: str = typer.Option("describe", "--steer", help="steerable reference: describe | draw | both | none"),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="requests in flight"),
    max_error_rate: float = typer.Option(
        0.1,
        "--max-error-rate",
        min=0.0,
        max=1.0,
        help="stop (exit 1) once more than this share of the answers asked for failed",
    ),
    rules: str = typer.Option("pointlab", "--rules", help=RULES_HELP),
    out: Optional[Path] = typer.Option(
        None, "--out", help="run folder (default: pointbench_runs/<model>-<style>-<steer>)"
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Run a model over Point-Bench (greedy, cached, resumable); prints mean/std per category and
    writes results.json, lmms_results.json, results.md and fig3.png/svg in the run folder."""
    from pointlab.benchmark.agents_config import (
        AgentConfig,
        AgentsConfigError,
        build_agent,
        model_agent_config,
    )
    from pointlab.benchmark.lmms import results_form, write_results
    from pointlab.benchmark.pointbench import DatasetError, load_dataset
    from pointlab.benchmark.pointbench.report import plot_fig3, results_table
    from pointlab.benchmark.pointbench.run import ErrorRateExceeded, RunOptions, run_pointing

    try:
        items = load_dataset(data)
        require_items(items, data)  # "n = 0" is a wrong path, not a score
        cfg = model_agent_config(agents, model)
        # the agents file's request settings as they are: its default temperature is 0, greedy as
        # PointArena sec. 4.1 runs Point-Bench; "omit" (a deployment that refuses any temperature) is honoured
        upd: dict[str, Any] = {}
        if prompt_style:
            upd["prompt_style"] = prompt_style
        cfg = AgentConfig.model_validate({**cfg.model_dump(), **upd})
        opts = RunOptions(
            runs=runs,
            concurrency=concurrency,
            steer_mode=steer,
            progress=progress,
            max_error_rate=max_error_rate,
            rules=rules,
        )
    except (DatasetError, AgentsConfigError, ValueError) as e:
        fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
    # base_url = "sim": the sim model server answers from this dataset's masks (a test double, reached
    # only through the sim_models registry)
    from .sim_models import SimModelsUnavailable, sim_server_for

    try:
        sim_url, stop = sim_server_for(cfg, "dataset", items)
    except SimModelsUnavailable as e:
        fail(str(e), 1)
    try:
        agent = build_agent(cfg, sim_base_url=sim_url)
        out_dir = out or Path("pointbench_runs") / f"{model}-{cfg.prompt_style}-{steer}"
        res = run_pointing(
            items,
            agent,
            out_dir,
            options=opts,
            record={"dataset": str(Path(data).resolve()), "agent": cfg.model_dump(exclude={"api_key_env"})},
        )
    except ErrorRateExceeded as e:
        fail(str(e), 1)
    except ValueError as e:
        fail(str(e))
    finally:
        if stop is not None:
            stop()
    table = results_table({model: res["aggregate"]})
    # the rule set is part of the number (docs/scoring.md): a table without it cannot be compared
    (out_dir / "results.md").write_text(
        f"Scored under `--rules {rules}` (docs/scoring.md).\n\n{table}", encoding="utf-8"
    )
    charts = plot_fig3({model: res["aggregate"]}, out_dir / "fig3", title=f"Point-Bench: {model} ({cfg.prompt_style})")
    agg = res["aggregate"]
    write_results(
        out_dir / "lmms_results.json",
        [
            results_form(
                "pointbench",
                {"pointbench_binary_acc": agg.get("overall", {}).get("mean")},
                n=len(items),
                rules=rules,
                scorer="pointing",
            )
        ],
    )
    res["table"] = table
    res["charts"] = [str(p) for p in charts]
    res["scores_file"] = str(_write_scores(out_dir, items, rules))
    print_json(res)
    if res["errors"]:
        typer.echo(f"warning: {res['errors']} answers failed with an error; rerun to retry them", err=True)


def _write_scores(out_dir: Path, items, rules: str) -> Path:
    """``scores.json`` of a Point-Bench run folder: every ``run_<k>.jsonl`` scored under both rule sets
    (``{"scorer", "rules_printed", "runs": {k: {"pointlab": summary, "reference": summary}}}``), each
    what ``pointlab score pointing --rules`` gives on that file (as the QA tasks' ``scores.json``)."""
    from pointlab.benchmark.pointbench import load_pred_jsonl
    from pointlab.benchmark.records import dumps_json
    from pointlab.benchmark.scorers import RULE_SETS, get_scorer

    runs: dict[str, dict] = {}
    for f in sorted(out_dir.glob("run_*.jsonl")):
        preds = load_pred_jsonl(f)
        k = f.stem.removeprefix("run_")
        runs[k] = {name: get_scorer("pointing")(items, preds, rules=name).to_dict()["summary"] for name in RULE_SETS}
    path = out_dir / "scores.json"
    path.write_text(
        dumps_json({"scorer": "pointing", "rules_printed": rules, "runs": runs}, indent=1) + "\n", encoding="utf-8"
    )
    return path


@bench_app.command("report")
def bench_report_cmd(
    run_dirs: list[Path] = typer.Option(..., "--run", help="run folder (results.json); repeat for several models"),
    out: Path = typer.Option(Path("pointbench_report"), "--out", help="output stem: <out>.md, <out>.png, <out>.svg"),
    human: Optional[Path] = typer.Option(None, "--human", help="human baseline PRED JSONL {id, points} (needs --data)"),
    data: Optional[Path] = typer.Option(None, "--data", help="dataset for --human"),
) -> None:
    """Fig. 3 over several runs (and the Human bar): table + chart."""
    import json

    from pointlab.benchmark.pointbench import DatasetError, load_dataset, load_pred_jsonl, score_predictions
    from pointlab.benchmark.pointbench.report import plot_fig3, results_table
    from pointlab.benchmark.pointbench.run import aggregate_runs

    aggs = {}
    try:
        for d in run_dirs:
            r = json.loads((d / "results.json").read_text(encoding="utf-8"))
            name = (
                r["model"]
                if r["model"] not in aggs
                else f"{r['model']} ({r.get('prompt_style')}, {r.get('steer_mode')})"
            )
            aggs[name] = r["aggregate"]
        if human is not None:
            if data is None:
                fail("--human needs --data")
            aggs["Human"] = aggregate_runs([score_predictions(load_dataset(data), load_pred_jsonl(human))["summary"]])
    except (OSError, KeyError, json.JSONDecodeError) as e:
        fail(f"cannot read a run: {e}")
    except DatasetError as e:
        fail(str(e))
    table = results_table(aggs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(table, encoding="utf-8")
    charts = plot_fig3(aggs, out)
    print_json({"models": aggs, "table": table, "charts": [str(p) for p in charts]})


@app.command("ratings")
def ratings_cmd(
    votes: Path = typer.Option(..., "--votes", help='JSONL {"model_a", "model_b", "winner"} in vote order'),
    method: str = typer.Option("bt", "--method", help="elo | bt"),
    ties: str = typer.Option("exclude", "--ties", help="exclude (PointArena) | half (FastChat)"),
    k: float = typer.Option(2.0, "--k", help="Elo K (PointArena: 2)"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="bootstrap seed"),
    rounds: int = typer.Option(100, "--rounds", help="bootstrap rounds for the 95% intervals (0: none)"),
    start: float = typer.Option(1000.0, "--start"),
    base: float = typer.Option(10.0, "--base", help="finite, > 1"),
    scale: float = typer.Option(400.0, "--scale", help="finite, > 0"),
) -> None:
    """Arena ratings: prints {model: {rating, ci_low, ci_high, rank, games}}."""
    from pointlab.benchmark.ratings import RatingsInputError, compute_ratings, load_votes_jsonl

    try:
        print_json(
            compute_ratings(
                load_votes_jsonl(votes),
                method,
                ties=ties,  # type: ignore[arg-type]  # compute_ratings checks it (RatingsInputError)
                k=k,
                start=start,
                base=base,
                scale=scale,
                bootstrap_rounds=rounds,
                seed=seed,
            )
        )
    except RatingsInputError as e:
        fail(str(e))


@perf_app.command("score")
def perf_score_cmd(
    items: int = typer.Option(50, "--items", min=1, help="masks scored per repeat"),
    side_px: int = typer.Option(1000, "--side-px", min=100, help="mask side, pixels"),
    votes: int = typer.Option(100_000, "--votes", min=10),
    models: int = typer.Option(20, "--models", min=2),
    rounds: int = typer.Option(100, "--rounds", min=1),
    repeat: int = typer.Option(5, "--repeat", min=1),
) -> None:
    """Mask-scoring throughput at 1000x1000 and Bradley-Terry bootstrap time (target < 10 s)."""
    from pointlab.benchmark.pointbench.perf import perf_score

    print_json(perf_score(items=items, side_px=side_px, votes=votes, models=models, rounds=rounds, repeat=repeat))


@perf_app.command("harness")
def perf_harness_cmd(
    items: int = typer.Option(1000, "--items", min=1, help="Point-Bench items per run"),
    concurrency: int = typer.Option(16, "--concurrency", min=2, help="requests in flight in the concurrent run"),
    latency_s: float = typer.Option(
        0.05, "--latency-s", min=0.0, max=60.0, help="the sim model's time per answer (asleep), seconds"
    ),
) -> None:
    """Point-Bench items per second one at a time and N in flight against the sim model server (target:
    8x at 16), and the harness's own time per item (target: < 5 ms)."""
    from pointlab.benchmark.pointbench.perf_harness import perf_harness

    if latency_s != latency_s:  # NaN passes typer's range check
        fail("--latency-s must be a number")
    print_json(perf_harness(items=items, concurrency=concurrency, latency_s=latency_s))


@bench_app.command("crossstage")
def crossstage_cmd(
    bench: list[Path] = typer.Option(
        [], "--bench", help="Point-Bench run folder/results.json or {model: accuracy} JSON (repeatable)"
    ),
    battle: Optional[Path] = typer.Option(None, "--battle", help="pointlab ratings output or {model: rating} JSON"),
    act: Optional[Path] = typer.Option(
        None, "--act", help="{model: success rate} JSON or Point-Act [{agent, success_rate}]"
    ),
    out: Path = typer.Option(Path("crossstage"), "--out", help="output stem for the Fig. 5b scatter plots (.png/.svg)"),
) -> None:
    """R^2 between stages per pair of Point-Bench / Point-Battle / Point-Act, with scatter plots (Fig. 5b)."""
    from pointlab.benchmark.crossstage import CrossStageError, cross_stage_report, load_stage_file, plot_fig5b

    stages: dict[str, dict[str, float]] = {}
    try:
        for b in bench:
            stages.setdefault("point_bench", {}).update(load_stage_file(b, "point_bench"))
        if battle is not None:
            stages["point_battle"] = load_stage_file(battle, "point_battle")
        if act is not None:
            stages["point_act"] = load_stage_file(act, "point_act")
    except CrossStageError as e:
        fail(str(e))
    if len(stages) < 2:
        fail("give at least two stages (--bench, --battle, --act)")
    report = cross_stage_report(stages)
    report["charts"] = [str(p) for p in plot_fig5b(report, out)]
    print_json(report)
