"""``pointlab score sus --pred FILE.jsonl``: SUS scores of saved survey responses (no model calls)."""

from __future__ import annotations

from pathlib import Path

import typer

from pointlab.benchmark.clikit import fail, print_json

from pointlab.bridge.commands import sub

score_app = sub.group("score")


@score_app.command("sus")
def score_sus_cmd(
    pred: Path = typer.Option(..., "--pred", help='JSONL, one {"id", "responses": [10 integers 1-5]} per line'),
) -> None:
    """Print {"items": [{"id", "score"}], "summary": {"mean", "n", "n_invalid"}} (Brooke 1996 scoring).

    A malformed line is an item with score null and a reason; an unreadable file exits with code 2.
    """
    from pointlab.bridge.study.sus import score_sus_file

    try:
        print_json(score_sus_file(pred))
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read {pred}: {e}")
