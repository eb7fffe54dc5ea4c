"""Fixtures of the stations' tests."""

from __future__ import annotations

import pytest

from pointlab.bridge.study.design import DESIGN, invite_participant
from pointlab.bridge.study.store import Store


@pytest.fixture
def study(tmp_path):
    """A SQLite study store with a two-agent study and one participant: ``(store, participant row)``."""
    store = Store(tmp_path / "study.sqlite")
    sid = store.create_study(
        agents=["sim-oracle", "sim-noisy"],
        trials_per_agent=2,
        scene="tabletop",
        design=DESIGN,
        reveal_low_s=0.0,  # the pick is commanded at once (a reveal time would only make the test wait)
        reveal_high_s=0.0,
    )
    pid, _token = invite_participant(store, sid, label="P1")
    yield store, store.participant(pid)
    store.close()
