"""The arena under load on PostgreSQL (issue 13): 50 concurrent voters for a bounded time on
loopback against 4 uvicorn workers (``pointlab bench arena --workers 4``) on a real PostgreSQL
server: no acknowledged vote lost, none stored unacknowledged, none counted twice. The figures
(votes/s, latencies, the bare-insert baseline) are printed; ``pointlab perf arena`` reports them."""

from __future__ import annotations

import json

import pytest

from pointlab.ui.arena.perf import measure_arena_perf

pytestmark = pytest.mark.slow


@pytest.mark.xdist_group("arena_load")  # not beside the other arena load tests: tests/ui/arena/conftest.py
def test_fifty_voters_four_workers_postgresql(pg_url):
    rep = measure_arena_perf(pg_url, workers=4, voters=50, duration_s=10.0, baseline_inserts=50)
    print(
        json.dumps(
            {
                k: rep[k]
                for k in (
                    "votes_per_s",
                    "battle_create_ms",
                    "vote_ms",
                    "baseline_bare_insert_ms",
                    "integrity",
                    "errors",
                )
            }
        )
    )
    check = rep["integrity"]
    assert check["acknowledged"] >= 20, rep
    assert check["lost"] == 0 and check["unacknowledged"] == 0 and check["double_counted"] == 0
    assert check["stored"] == check["acknowledged"]
    assert rep["errors"] == 0, rep["first_errors"]
