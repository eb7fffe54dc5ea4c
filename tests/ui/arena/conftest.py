"""Arena fixtures: a private PostgreSQL server (skipped with the reason when none can be started)."""

from __future__ import annotations

import pytest

from tests.pgcluster import PgCluster, PgUnavailable

# The arena's load tests (test_load_pg, test_outage_pg, test_restart, test_upload_stall) each start an
# arena (several uvicorn worker processes, or a 4096 x 4096 upload) and drive it with voters; they carry
# @pytest.mark.xdist_group("arena_load"), so under `--dist loadgroup` one worker runs them one after
# another: side by side they would compete for the same cores (each keeps several processes busy),
# and test_upload_stall measures latencies.


def _cluster():
    """A started private cluster, stopped when the fixture ends; skipped with the reason when none starts."""
    try:
        cluster = PgCluster().start()
    except PgUnavailable as e:
        pytest.skip(f"PostgreSQL server unavailable: {e}")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def pg_server():
    """A running private PostgreSQL cluster (``.url``) for the whole test session."""
    yield from _cluster()


@pytest.fixture
def own_pg():
    """A cluster of the test's own, for a test that stops and starts it (the shared one must not be)."""
    yield from _cluster()


_db_counter = iter(range(10**6))


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty database on the test cluster: its SQLAlchemy URL."""
    import psycopg

    name = f"t{next(_db_counter)}"
    with psycopg.connect(
        f"host={pg_server.sock} port={pg_server.port} user=pointlab dbname=pointlab", autocommit=True
    ) as c:
        c.execute(f"CREATE DATABASE {name}")
    return pg_server.url.replace("/pointlab?", f"/{name}?")
