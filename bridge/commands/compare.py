"""``pointlab act compare``: a simulated and a real Point-Act study side by side (docs/statistics.md)."""

from __future__ import annotations

from typing import Optional

import typer

from pointlab.benchmark.clikit import fail, print_json

from pointlab.bridge.commands import sub
from pointlab.bridge.commands.stores import read_store

act_app = sub.group("act")


def _rows(db: str, study: int, option: str) -> list[dict]:
    from pointlab.bridge.study.store import StoreError

    store = read_store(db, option)
    try:
        store.study(study)  # an unknown study is a StoreError, not an empty comparison
        return store.trials(study_id=study)
    except StoreError as e:
        fail(f"{option}: {e}", 2)
    finally:
        store.close()


@act_app.command("compare")
def compare_cmd(
    sim: int = typer.Option(..., "--sim", min=1, help="id of the study run in simulation"),
    real: int = typer.Option(..., "--real", min=1, help="id of the study run on the real robot"),
    db: Optional[str] = typer.Option(
        None, "--db", help="store of both studies (SQLite file or postgresql+psycopg URL)"
    ),
    sim_db: Optional[str] = typer.Option(None, "--sim-db", help="store of the simulated study (default: --db)"),
    real_db: Optional[str] = typer.Option(None, "--real-db", help="store of the real study (default: --db)"),
    alpha: float = typer.Option(0.05, "--alpha", min=0.001, max=0.5, help="error level of the intervals (0.05: 95 %)"),
) -> None:
    """Per-agent success in a simulated and a real study, Pearson r and MMRV of the rates (SimplerEnv),
    and each agent's real success estimated by prediction-powered inference from both (SureSim):
    real trials are paired with the simulated rate of the same agent on the same instruction. Prints
    JSON."""
    from pointlab.bridge.study.simreal import compare_studies

    sim_db, real_db = sim_db or db, real_db or db
    if sim_db is None or real_db is None:
        fail("give --db (both studies) or --sim-db and --real-db", 2)
    if sim == real and sim_db == real_db:
        fail(f"--sim and --real are the same study ({sim}): compare a simulated study with a real one", 2)
    assert sim_db is not None and real_db is not None
    out = compare_studies(_rows(sim_db, sim, "--sim"), _rows(real_db, real, "--real"), alpha=alpha)
    if not out["agents"]:
        fail(f"studies {sim} and {real} have no agent with judged trials in both", 1)
    print_json({"sim_study": sim, "real_study": real, **out})
