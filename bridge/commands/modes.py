"""``pointlab act mode-study``: which study mode ranks four agents of known quality with fewer robot
trials, measured with the real trial machine in simulation (docs/statistics.md, "Which mode to use")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from pointlab.benchmark.clikit import fail, print_json

from pointlab.bridge.commands import sub

act_app = sub.group("act")

DEFAULT_ABSOLUTE_SIZES = "2,4,6,8,12,16,24,32,48"
DEFAULT_PAIRWISE_SIZES = "6,12,18,24,36,48,72,96,144"


def _sizes(text: str, option: str) -> list[int]:
    try:
        sizes = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        fail(f"{option}: give whole numbers separated by commas, e.g. 4,8,16 (got {text[:40]!r})", 2)
    if not sizes or sizes[0] < 1 or sizes[-1] > 10_000:
        fail(f"{option}: sizes must be whole numbers from 1 to 10000 (got {text[:40]!r})", 2)
    return sizes


def _pick_instructions() -> list[str]:
    """The sim world's picks from its start scene: the first pick of each object of its demo script."""
    from pointlab.bridge.trials.headless import demo_script

    seen, out = set(), []
    for item in demo_script("sim", "sim"):
        exp = item.get("expected") or {}
        if exp.get("action") == "pick" and exp.get("object") not in seen:
            seen.add(exp.get("object"))
            out.append(item["instruction"])
    return out


def _read_records(path: Path):
    from pointlab.bridge.study.modesim import TrialOutcome

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"--records: cannot read {path}: {e}", 2)
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(TrialOutcome(str(row["agent"]), str(row["instruction"]), bool(row["success"])))
        except (ValueError, KeyError, TypeError) as e:
            fail(f"--records: line {n} of {path} is not {{agent, instruction, success}}: {e}", 2)
    return out


def _progress(p: dict) -> None:
    print(
        f"round {p['round']}/{p['of']}  {p['agent']}  {p['instruction']}: {'succeeded' if p['success'] else 'failed'}",
        file=sys.stderr,
        flush=True,
    )


@act_app.command("mode-study")
def mode_study_cmd(
    out: Path = typer.Option(..., "--out", help="empty or new folder for records.jsonl, results.json and the plot"),
    rounds: int = typer.Option(
        20,
        "--rounds",
        min=1,
        max=1000,
        help="times every agent runs every instruction (at least 5 or so: agents with the same recorded rate have no true order)",
    ),
    studies: int = typer.Option(300, "--studies", min=10, max=100_000, help="simulated studies per size and mode"),
    absolute_sizes: str = typer.Option(DEFAULT_ABSOLUTE_SIZES, "--absolute-sizes", help="trials per agent to try"),
    pairwise_sizes: str = typer.Option(DEFAULT_PAIRWISE_SIZES, "--pairwise-sizes", help="episodes per study to try"),
    records: Optional[Path] = typer.Option(
        None, "--records", help="records.jsonl of an earlier run: resample it, run no trial"
    ),
    time_scale: float = typer.Option(0.02, "--time-scale", min=0.001, max=10.0, help="sim arm motion-time multiplier"),
    seed: int = typer.Option(0, "--seed", min=0, max=2**31 - 1, help="seed of the resampling"),
) -> None:
    """Record four agents of graded quality (sim-oracle and 10, 14, 20 px of pointing noise:
    bridge/mode_study_agents.toml) on the sim world's picks through the real trial machine, each trial
    from the restored start scene, then resample studies of each size in absolute mode and in pairwise
    mode (uniform and adaptive pairs), and print how often each ranks the four correctly and the robot
    trials it needs for 95 %. JSON; the records, results and a plot go to --out."""
    from pointlab.benchmark.bundle import not_empty
    from pointlab.bridge.study.modesim import (
        MODES,
        ModeStudyError,
        record_outcomes,
        simulate,
        trials_needed,
        true_order,
    )

    a_sizes = _sizes(absolute_sizes, "--absolute-sizes")
    p_sizes = _sizes(pairwise_sizes, "--pairwise-sizes")
    if (problem := not_empty(out)) is not None:
        fail(f"--out: {problem}", 2)
    if records is not None:
        recorded = _read_records(records)
        source: dict[str, Any] = {"records": str(records)}
    else:
        from importlib import resources

        from pointlab.bridge.commands.act import start_or_fail

        agents_file = resources.files("pointlab.bridge").joinpath("mode_study_agents.toml")
        with resources.as_file(agents_file) as agents_path:
            session = start_or_fail("sim", "sim", agents_path, None, None, time_scale)
            agents = list(session.station.agent_names)
            instructions = _pick_instructions()
            # each outcome is written as it comes: a run stopped part way keeps what it recorded
            out.mkdir(parents=True, exist_ok=True)
            with open(out / "records.jsonl", "w", encoding="utf-8") as sink:

                def progress(p: dict) -> None:
                    sink.write(json.dumps({k: p[k] for k in ("agent", "instruction", "success")}) + "\n")
                    sink.flush()
                    _progress(p)

                try:
                    recorded = record_outcomes(session.station, agents, instructions, rounds=rounds, progress=progress)
                except (ValueError, RuntimeError) as e:
                    fail(f"the trials stopped: {e}", 1)
                finally:
                    session.close()
        source = {"rounds": rounds, "time_scale": time_scale, "instructions": instructions}
    try:
        order = true_order(recorded)
        results = {
            mode: simulate(recorded, mode, a_sizes if mode == "absolute" else p_sizes, studies=studies, seed=seed)
            for mode in MODES
        }
    except ModeStudyError as e:
        fail(str(e), 1)
    summary = {
        "source": source,
        "n_records": len(recorded),
        "true_order": [{"agent": a, "success_rate": r} for a, r in order],
        "studies_per_size": studies,
        "seed": seed,
        "modes": results,
        "needed_for_95": {m: trials_needed(rows) for m, rows in results.items()},
    }
    out.mkdir(parents=True, exist_ok=True)
    if records is not None:  # (a recording run wrote its records as they came)
        (out / "records.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in recorded))
    (out / "results.json").write_text(json.dumps(summary, indent=1) + "\n")
    _plot(results, out / "modes")
    print_json(summary)


def _plot(results: dict, stem: Path) -> None:
    from matplotlib.figure import Figure

    from pointlab.bridge.study.plots import save_figure

    fig = Figure(figsize=(6.0, 3.6))
    ax = fig.subplots()
    for mode, rows in results.items():
        ax.plot([r["robot_trials"] for r in rows], [r["share"] for r in rows], marker="o", label=mode)
    ax.axhline(0.95, color="#8c959f", lw=0.8, ls=":")
    ax.set_xscale("log")
    # the robot-trial counts themselves as ticks (a log axis alone labels 8x10^0, 10^1 and skips 16)
    ticks = sorted({r["robot_trials"] for rows in results.values() for r in rows})
    ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=7, rotation=45)
    ax.minorticks_off()
    ax.set_xlabel("robot trials per study (log scale)")
    ax.set_ylabel("share of studies ranking all four correctly")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    ax.set_title("Which study mode ranks agents with fewer trials", fontsize=10)
    save_figure(fig, stem)
