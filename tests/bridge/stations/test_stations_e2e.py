"""Issue 22's must-show: a study server and two sim stations as processes, PostgreSQL, two scripted
participants to the end, one station killed (SIGKILL) in the middle of a trial.

Checked against PostgreSQL and the surviving station's own journal, not against what the server said:
every trial a participant was answered with is stored once; the killed trial is ``aborted`` /
``station_lost`` and was never charged (each participant still has ``trials_per_agent`` kept trials per
block); its participant finished on the other station; every judgement and questionnaire is there once.
Each station recorded its trials (MCAP beside its journal); the killed one, started again on its
journal, closes its cut trial as ``interrupted`` with the recording recovered and delivers it, and the
server keeps one row for that trial.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import _reserve_domain
from tests.bridge.stations.support import free_port, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.ros, pytest.mark.browser]

POINTLAB = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()"]
TOKEN = "operator-token-e2e"
AGENTS = ["sim-oracle", "sim-noisy"]
TRIALS_PER_AGENT = 2


@pytest.fixture
def pg_url():
    from tests.pgcluster import PgCluster, PgUnavailable

    try:
        cluster = PgCluster(max_connections=100)
    except PgUnavailable as e:
        pytest.fail(f"PostgreSQL is part of the test install (README): {e}")
    with cluster as pg:
        yield pg.url


def _station(name: str, zport: int, tmp: Path, domain: int) -> subprocess.Popen:
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    cmd = [
        *POINTLAB,
        "act",
        "station",
        "--connect",
        f"tcp/127.0.0.1:{zport}",
        "--name",
        name,
        "--journal",
        str(tmp / f"{name}.sqlite"),
        "--time-scale",
        "0.05",
        "--camera-fps",
        "5",
        "--live-hz",
        "2",
    ]
    return subprocess.Popen(cmd, env=env, cwd=tmp, stdout=open(tmp / f"{name}.log", "w"), stderr=subprocess.STDOUT)


def test_a_station_killed_mid_trial_loses_nothing_and_its_participant_finishes_on_the_other(tmp_path, pg_url, chromium):
    from pointlab.bridge.study.store import Store
    from pointlab.ui.stations_participant import ScriptedParticipant

    zport, wport = free_port(), free_port()
    base = f"http://127.0.0.1:{wport}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    domains = [_reserve_domain(child_processes_only=True) for _ in range(2)]
    server = subprocess.Popen(
        [
            *POINTLAB,
            "act",
            "server",
            "--db",
            pg_url,
            "--listen",
            f"tcp/127.0.0.1:{zport}",
            "--port",
            str(wport),
            "--recordings",
            str(tmp_path / "at-server"),
        ],
        env={**os.environ, "POINTLAB_OPERATOR_TOKEN": TOKEN},
        cwd=tmp_path,
        stdout=open(tmp_path / "server.log", "w"),
        stderr=subprocess.STDOUT,
    )
    stations = {n: _station(n, zport, tmp_path, d) for n, (d, _fd) in zip(("s1", "s2"), domains)}
    try:

        def console():
            try:
                return httpx.get(f"{base}/api/console", headers=auth, timeout=5).json()
            except httpx.HTTPError:
                return None

        wait_for(
            lambda: (c := console()) and sum(s["status"] == "idle" for s in c["stations"]) == 2, 180, "2 idle stations"
        )
        study = httpx.post(
            f"{base}/api/studies",
            headers=auth,
            json={
                "agents": AGENTS,
                "trials_per_agent": TRIALS_PER_AGENT,
                "participants": 2,
                "reveal_low_s": 1.5,  # a trial lasts long enough to be caught in the middle
                "reveal_high_s": 2.0,
            },
        ).json()

        killed: dict = {}

        def begun_at(name: str) -> bool:
            """The station's journal holds a trial it began and has not finished (it is in the middle
            of one, not between the server's order and its start)."""
            try:
                with sqlite3.connect(tmp_path / f"{name}.sqlite", timeout=1) as j:
                    return j.execute("SELECT 1 FROM journal WHERE record IS NULL").fetchone() is not None
            except sqlite3.Error:  # not created yet, or busy this instant
                return False

        async def kill_one_mid_trial():
            while True:
                c = await asyncio.to_thread(console)
                busy = [s for s in (c or {"stations": []})["stations"] if s["status"] == "in_trial"]
                if busy and await asyncio.to_thread(begun_at, busy[0]["name"]):
                    victim = busy[0]
                    killed.update(victim)
                    stations[victim["name"]].send_signal(signal.SIGKILL)
                    return
                await asyncio.sleep(0.05)

        async def study_run():
            people = [ScriptedParticipant(base, t, deadline_s=400) for t in study["tokens"]]
            killer = asyncio.ensure_future(kill_one_mid_trial())
            logs = await asyncio.gather(*(p.run() for p in people))
            await asyncio.wait_for(killer, 1)
            return logs

        # in a thread of its own: Playwright's sync API (the chromium fixture) holds this thread's loop
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            logs = pool.submit(asyncio.run, study_run()).result()
        assert all(lg.finished for lg in logs), [(lg.errors, len(lg.trials)) for lg in logs]
        survivor = "s2" if killed["name"] == "s1" else "s1"

        store = Store(pg_url)
        rows = store.trials(study_id=study["study_id"])
        # every trial a participant was answered with is stored, and stored once
        answered = [t["trial_id"] for lg in logs for t in lg.trials]
        assert sorted(answered) == sorted(r["id"] for r in rows)
        assert len({r["trial_uid"] for r in rows}) == len(rows)
        lost = [r for r in rows if (r.get("abort") or {}).get("code") == "station_lost"]
        assert len(lost) == 1, [(r["outcome"], r["abort"]) for r in rows]
        assert lost[0]["outcome"] == "aborted" and lost[0]["station"] == killed["name"]
        victim_pid = lost[0]["participant_id"]
        assert victim_pid == killed["participant_id"]
        # not charged: every block still has its kept (non-aborted) trials, all judged once
        for p in store.participants(study["study_id"]):
            mine = [r for r in rows if r["participant_id"] == p["id"]]
            for block in range(len(AGENTS)):
                kept = [r for r in mine if r["block"] == block and r["outcome"] != "aborted"]
                assert len(kept) == TRIALS_PER_AGENT
                assert all(
                    r["judgement"] in ("succeeded", "failed") or r["robot_outcome"] == "refused" for r in kept
                ), [(r["robot_outcome"], r["outcome"], r["judgement"], r["abort"], r["station"]) for r in kept]
            assert sorted(s["block"] for s in store.surveys(participant_id=p["id"])) == list(range(len(AGENTS)))
        # the participant finished on the other station: its trials after the loss ran there, and that
        # station's own journal holds them (delivered: the server acknowledged each)
        after = [r for r in rows if r["participant_id"] == victim_pid and r["id"] > lost[0]["id"]]
        assert after and all(r["station"] == survivor for r in after)
        journal = sqlite3.connect(tmp_path / f"{survivor}.sqlite")

        def delivered() -> bool:  # the journal marks a record once the server's acknowledgement is in
            kept_there = dict(journal.execute("SELECT trial_uid, delivered_unix_s FROM journal").fetchall())
            return all(kept_there.get(r["trial_uid"]) is not None for r in after)

        wait_for(delivered, 30, "the survivor's journal to hold every later trial, acknowledged")

        # every trial that reached the arm was recorded at its station: the MCAP named in the stored
        # record is in that station's recordings folder (recordings/NAME beside its journal)
        moved = [r for r in after if r["robot_outcome"] == "done"]
        assert moved, [(r["robot_outcome"], r["outcome"]) for r in after]
        for r in moved:
            rec = r["recording"]
            assert rec and rec["mcap"] and rec["errors"] == [], rec
            bag = tmp_path / "recordings" / survivor / rec["bag"]
            # (mcap_bytes counts the bag's metadata.yaml as well: docs/recording.md)
            assert sum(f.stat().st_size for f in bag.iterdir()) == rec["mcap_bytes"] > 0
            assert (tmp_path / "recordings" / survivor / rec["mcap"]).parent == bag
            assert rec["color_frames"] >= 1

        # ... and delivered to the server once acknowledged: the same bytes under at-server/NAME/
        def copied(r: dict, name: str) -> bool:
            rec, here = r["recording"], tmp_path / "recordings" / name
            paths = [rec["mcap"], f"{rec['bag']}/metadata.yaml", f"{r['trial_uid']}.json"]
            paths += [rec["clip"]] if rec.get("clip") else []
            there = tmp_path / "at-server" / name
            return all((there / p).is_file() and (there / p).read_bytes() == (here / p).read_bytes() for p in paths)

        wait_for(lambda: all(copied(r, survivor) for r in moved), 60, "the recordings at the server")
        # and `act export` on the server's store finds them in the server's folder, per station
        export = subprocess.run(
            [*POINTLAB, "act", "export", "--db", pg_url, "--study", str(study["study_id"]), "--out",
             str(tmp_path / "export"), "--recordings", str(tmp_path / "at-server")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert export.returncode == 0, export.stderr[-2000:]
        exported = {t["trial_uid"]: t for t in json.loads(export.stdout)["trials"]}
        assert all(exported[r["trial_uid"]]["mcap"] for r in moved)

        # the operator's console, in Chromium: both stations, the killed one offline with its loss counted
        page = chromium.new_page()
        try:
            page.goto(f"{base}/stations#token={TOKEN}")
            page.wait_for_selector(f"tr[data-station='{killed['name']}']", timeout=30_000)
            cells = page.locator(f"tr[data-station='{killed['name']}'] td").all_inner_texts()
            assert cells[1] == "offline" and cells[7] == "1"
            other = page.locator(f"tr[data-station='{survivor}'] td").all_inner_texts()
            assert other[1] == "idle" and int(other[6]) >= 5  # it ran the rest of the study
            assert "1 lost with their station" in page.inner_text("#records")
        finally:
            page.close()

        # the killed station comes back on its journal: the trial it was running is closed there as
        # interrupted, its cut recording recovered beside it, and delivered; the server keeps its own
        # station_lost row (the same trial id) and counts the late one as a duplicate, not a second trial
        kj = tmp_path / f"{killed['name']}.sqlite"
        (begun,) = sqlite3.connect(kj).execute("SELECT trial_uid FROM journal WHERE record IS NULL").fetchall()
        assert begun[0] == lost[0]["trial_uid"]
        d = domains[0][0] if killed["name"] == "s1" else domains[1][0]
        stations[killed["name"]] = _station(killed["name"], zport, tmp_path, d)

        def late_delivered() -> bool:
            got = (
                sqlite3.connect(kj)
                .execute("SELECT record, delivered_unix_s FROM journal WHERE trial_uid = ?", (begun[0],))
                .fetchone()
            )
            return got is not None and got[0] is not None and got[1] is not None

        wait_for(late_delivered, 180, "the restarted station to deliver its interrupted trial")
        record = json.loads(
            sqlite3.connect(kj).execute("SELECT record FROM journal WHERE trial_uid = ?", (begun[0],)).fetchone()[0]
        )
        assert record["result"]["abort"]["code"] == "interrupted"
        cut = record["result"]["recording"]
        if (tmp_path / "recordings" / killed["name"] / begun[0]).exists():  # killed after its recording began
            assert cut is not None and cut["ended_by"] == "interrupted", cut
            kept_cut = tmp_path / "at-server" / killed["name"] / cut["bag"]
            wait_for(lambda: kept_cut.is_dir() and any(kept_cut.iterdir()), 60, "the cut recording at the server")
        else:  # killed between the server's order and the recording's start: nothing was recorded
            assert cut is None
        assert len(store.trials(study_id=study["study_id"])) == len(rows)  # no second row
        assert store.trial(lost[0]["id"])["abort"]["code"] == "station_lost"
        store.close()
    finally:
        for p in [*stations.values(), server]:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in [*stations.values(), server]:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        for _d, fd in domains:
            os.close(fd)
