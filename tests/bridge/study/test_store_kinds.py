"""A study store and an arena store are told apart before either is written to (a newcomer's
`act publish --db arena.db` added the study tables to an arena and raised its schema version, so the
arena refused its own file; `bench arena-publish --db study.sqlite` did the reverse)."""

from __future__ import annotations

import hashlib

import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import build_app
from pointlab.bridge.study.store import Store, StoreError
from pointlab.ui.arena.store import ArenaError, ArenaStore


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_each_store_refuses_the_other_kind_and_leaves_it_as_it_was(tmp_path):
    arena_db, study_db = tmp_path / "arena.db", tmp_path / "study.sqlite"
    ArenaStore(arena_db).close()
    s = Store(study_db)
    s.create_study(agents=["a"], trials_per_agent=1)
    s.close()
    before = {p: _digest(p) for p in (arena_db, study_db)}
    for create in (True, False):
        with pytest.raises(StoreError, match="arena store, not a Point-Act study store"):
            Store(arena_db, create=create)
    with pytest.raises(ArenaError, match="study store, not an arena store"):
        ArenaStore(study_db)
    for args in (
        ["act", "publish", "--db", str(arena_db), "--study", "1", "--out", str(tmp_path / "b")],
        ["act", "compare", "--db", str(arena_db), "--sim", "1", "--real", "2"],
        ["bench", "arena-publish", "--db", str(study_db), "--out", str(tmp_path / "c")],
    ):
        r = CliRunner().invoke(build_app(), args)
        assert r.exit_code == 2 and "store" in r.output and "Traceback" not in r.output, (args, r.output)
    assert {p: _digest(p) for p in (arena_db, study_db)} == before
    assert ArenaStore(arena_db).vote_count() == 0  # the arena still opens
