"""``pointlab act plan``: how many trials or episodes a study needs and how long it takes
(docs/statistics.md)."""

from __future__ import annotations

from typing import Optional

import typer

from pointlab.benchmark.clikit import fail, print_json

from pointlab.bridge.commands import sub
from pointlab.bridge.commands.stores import read_store

act_app = sub.group("act")

ASSUMED_TRIAL_S = 60.0  # without a store to measure: instruction, agent, motion, judgement, next instruction


@act_app.command("plan")
def plan_cmd(
    agents: int = typer.Option(..., "--agents", min=1, max=100, help="number of agents compared"),
    margin: Optional[float] = typer.Option(
        None, "--margin", min=0.01, max=0.99, help="difference of success rates to separate, e.g. 0.2"
    ),
    width: Optional[float] = typer.Option(
        None, "--width", min=0.01, max=0.99, help="full width of each agent's 95 % interval (absolute mode)"
    ),
    mode: str = typer.Option("absolute", "--mode", help="absolute (success rates) or pairwise (A/B episodes)"),
    stations: int = typer.Option(1, "--stations", min=1, max=1000, help="robot stations running at once"),
    power: float = typer.Option(0.8, "--power", min=0.5, max=0.99, help="chance of separating a true margin"),
    alpha: float = typer.Option(0.05, "--alpha", min=0.001, max=0.2, help="two-sided test level"),
    db: Optional[str] = typer.Option(None, "--db", help="a study store to measure this installation's trial time"),
    trial_s: Optional[float] = typer.Option(None, "--trial-s", min=1.0, max=3600.0, help="seconds per trial"),
    validate: bool = typer.Option(False, "--validate", help="check the plan on 2000 simulated studies"),
) -> None:
    """Print the trials (absolute) or episodes (pairwise) per agent needed to separate --margin with
    --power, or to reach an interval --width, and the expected study time on --stations stations (the
    trial time measured from --db, else --trial-s, else 60 s assumed). JSON."""
    from pointlab.bridge.study.planning import PlanError, make_plan, measured_trial_s, simulate_power, simulate_width

    if mode not in ("absolute", "pairwise"):
        fail(f"--mode must be absolute or pairwise, got {mode!r}", 2)
    source = "given"
    if trial_s is None and db is not None:
        store = read_store(db)
        try:
            trial_s = measured_trial_s(store.trials())
        finally:
            store.close()
        source = f"measured in {db}" if trial_s is not None else ""
        if trial_s is None:
            fail(
                f"--db {db}: fewer than 5 gaps between one participant's consecutive trials of a block to "
                "measure a trial time (headless `act trials` belong to no participant); give --trial-s",
                2,
            )
    if trial_s is None:
        trial_s, source = ASSUMED_TRIAL_S, "assumed (give --db or --trial-s)"
    try:
        plan = make_plan(
            agents=agents,
            mode=mode,  # type: ignore[arg-type]  # checked above
            margin=margin,
            width=width,
            power=power,
            alpha=alpha,
            stations=stations,
            trial_s=trial_s,
            trial_s_source=source,
        )
    except PlanError as e:
        fail(str(e), 2)
    out = plan.to_dict()
    if source.startswith("measured") and trial_s < 5:
        # a sim study run with --time-scale: its pace is not a person's at a robot
        out["note"] = (
            f"the measured trial time ({trial_s} s) is shorter than a person's trial; a time-scaled sim study?"
        )
    if margin is not None and width is not None and plan.mode == "absolute":
        out["note_size"] = "both --margin and --width given: the larger of the two sizes is planned"
    if margin is not None and margin > 0.5:
        out["note_margin"] = "a margin over 0.5 is a very large difference; the normal approximation is rough there"
    if validate:
        checks = {}
        if margin is not None:
            n = plan.per_pair if plan.per_pair is not None else plan.per_agent
            checks["power"] = simulate_power(margin, mode=plan.mode, n=n, alpha=alpha)
        if width is not None:
            checks["width_reached"] = simulate_width(plan.per_agent, width, [0.5, 0.3, 0.7, 0.1, 0.9])
        out["validation"] = {"draws": 2000, **checks}
    print_json(out)
