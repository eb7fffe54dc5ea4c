"""``pointlab act publish``: one study as a versioned, checksummed bundle (bridge/study/publish.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pointlab.benchmark.clikit import fail, print_json

from pointlab.bridge.commands import sub
from pointlab.bridge.commands.stores import read_store

act_app = sub.group("act")


@act_app.command("publish")
def publish_cmd(
    db: str = typer.Option(..., "--db", help="the study's store: a SQLite file or a postgresql+psycopg URL"),
    study: int = typer.Option(..., "--study", min=1, help="study id"),
    out: Path = typer.Option(..., "--out", help="folder to write (new or empty)"),
    recordings: Optional[Path] = typer.Option(
        None, "--recordings", help="recordings folder to index (default: recordings/ beside a SQLite db)"
    ),
    calibration: Optional[Path] = typer.Option(None, "--calibration", help="the hand-eye calibration file used"),
) -> None:
    """Write a study as a folder a paper can cite: trial table, results (JSON, CSV), plots (SVG, PNG),
    configuration, reference images, software and calibration, an index of the recordings, a README
    with the methods filled in, and a SHA-256 manifest. Prints bundle.json."""
    from pointlab.bridge.recording.layout import default_recordings_dir
    from pointlab.bridge.study.publish import PublishError, publish_study

    store = read_store(db)
    if recordings is None and "://" not in db:
        recordings = default_recordings_dir(db)
    try:
        print_json(publish_study(store, study, out, recordings_dir=recordings, calibration=calibration))
    except PublishError as e:
        fail(str(e), 2)
    except OSError as e:
        fail(f"writing {out} failed: {e}", 1)
    finally:
        store.close()
