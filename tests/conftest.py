"""Fixtures shared by every test package: real data, ROS isolation, Chromium."""

from __future__ import annotations

import fcntl
import itertools
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.astparse import serialize_ast_parse

# Before any test thread runs: CPython 3.11.7 cannot build two ASTs at once (tests/astparse.py).
serialize_ast_parse()

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("POINTLAB_SHARED_DATA", REPO.parent / "shared" / "data"))
CHROMIUM = os.environ.get("POINTLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# The suite's own cache folder (the bit-packed mask cache, benchmark.pointbench.maskcache): tests never
# write into ~/.cache, and each test process starts cold; removed when the process ends.
_CACHE_DIR = tempfile.mkdtemp(prefix="pointlab-test-cache-")
os.environ["POINTLAB_CACHE_DIR"] = _CACHE_DIR


def pytest_unconfigure(config) -> None:
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$POINTLAB_SHARED_DATA``); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(scope="session")
def uoc_tabletop(shared_data: Path) -> Path:
    p = shared_data / "rgbd" / "uoc_tabletop"
    if not (p / "camera_params.json").exists():
        pytest.skip(f"{p} is absent")
    return p


# Domain ids are drawn per process from a shuffled range, and each is held with an exclusive file
# lock for the test's duration, so parallel test runs on one machine (CI, a developer's second shell,
# several checkouts) never share a DDS domain: a shared domain makes the sessions see each other.
_domains = itertools.cycle(random.Random(os.getpid()).sample(range(1, 100), 99))
# Tests that run ROS only in child processes (the stations' end-to-end tests) draw from ROS 2's other
# safe range on Linux (215-232, "The ROS_DOMAIN_ID" in the ROS 2 docs), never shared with tests that
# open rclpy in the pytest worker itself: a worker's DDS participant can outlive its test's lock (CI
# run q: a station's graph guard refused domain 6 for a camera test's "pointlab_camera" and "probe").
_process_domains = itertools.cycle(random.Random(os.getpid()).sample(range(215, 233), 18))
_LOCK_DIR = Path(os.environ.get("POINTLAB_TEST_LOCK_DIR", tempfile.gettempdir()))


def _session_holds(domain: int) -> bool:
    """A Point-Act session of this machine (``pointlab act`` outside the tests) holds ``domain``'s lock."""
    from pointlab.bridge.ros.domain_lock import lock_path

    fd = os.open(lock_path(domain), os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # a free lock is let go at once: the test's own session takes it
    return False


def _reserve_domain(*, child_processes_only: bool = False) -> tuple[int, int]:
    """A free domain id and the open, locked file descriptor that holds it (a domain a running
    session holds is skipped too: its lock would refuse the test's session). ``child_processes_only``:
    the test opens no rclpy context in its own process, and gets a domain from the separate range."""
    pool, size = (_process_domains, 18) if child_processes_only else (_domains, 99)
    for _ in range(size):
        domain = next(pool)
        fd = os.open(_LOCK_DIR / f"pointlab-test-ros-domain-{domain}.lock", os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if _session_holds(domain):
            os.close(fd)
            continue
        return domain, fd
    raise RuntimeError(f"all {size} test ROS domains of this range are held by other test runs")


@pytest.fixture
def ros_env(monkeypatch):
    """Keep DDS on this machine and give the test its own ROS_DOMAIN_ID (held exclusively across
    processes until the test ends); returns the id."""
    domain, fd = _reserve_domain()
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    try:
        yield domain
    finally:
        os.close(fd)  # closing the descriptor releases the lock


# Module scope, not session: while Playwright's sync API is open, the main thread counts as running an
# event loop, and a later test's asyncio.run() fails ("cannot be called from a running event loop").
@pytest.fixture(scope="module")
def chromium():
    """A Playwright ``Browser`` on Debian's Chromium (no browser download)."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail(f"Debian chromium not found at {CHROMIUM}; install it with apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


# -- test tiers -------------------------------------------------------------------------------------
# The fast tier is `pytest -m "not slow and not ros and not browser"` (docs/architecture.md). Tests
# that start ROS nodes or Chromium are marked by the fixtures they use, so no one has to remember;
# anything else over SLOW_S seconds must carry @pytest.mark.slow, and the run lists the ones that
# do not (`--fail-unmarked-slow` makes that list fail the run).
SLOW_S = 3.0
_TIER_MARKERS = ("slow", "ros", "browser")
_FIXTURE_MARKERS = {"ros_env": "ros", "chromium": "browser"}
_unmarked_slow: list[tuple[str, float]] = []


def pytest_addoption(parser):
    parser.addoption(
        "--fail-unmarked-slow",
        action="store_true",
        help=f"fail the run when a test without a tier marker took more than {SLOW_S} s",
    )


# Long without a tier marker, for the order below only: mypy over the tree takes 20-40 s without its
# cache (a fresh clone) and under a second with it, so it stays in the fast tier.
_LONG_UNTIERED = {"tests/test_types.py::test_mypy_finds_nothing"}


def _runs_long(item) -> bool:
    return item.nodeid in _LONG_UNTIERED or any(item.get_closest_marker(m) for m in _TIER_MARKERS)


def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture, marker in _FIXTURE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(getattr(pytest.mark, marker))
    # Under pytest-xdist (`--dist loadgroup`, pyproject.toml) tests are handed out a few at a time in
    # this order: the tests of an xdist_group first (one worker runs a group's tests one after another:
    # the longest share), then the long tests (slow, ros, browser: seconds to a minute each), then the
    # quick ones, so that the workers end together instead of one finishing a long test alone.
    items.sort(key=lambda item: (not item.get_closest_marker("xdist_group"), not _runs_long(item)))  # stable


def pytest_runtest_logreport(report):
    if report.when != "call" or report.duration <= SLOW_S:
        return
    if not any(m in report.keywords for m in _TIER_MARKERS):
        _unmarked_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _unmarked_slow:
        return
    terminalreporter.section(f"tests over {SLOW_S:.0f} s without a slow/ros/browser marker")
    for nodeid, s in sorted(_unmarked_slow, key=lambda x: -x[1]):
        terminalreporter.line(f"{s:6.1f} s  {nodeid}")


def pytest_sessionfinish(session, exitstatus):
    if _unmarked_slow and session.config.getoption("--fail-unmarked-slow") and exitstatus == 0:
        session.exitstatus = 1
