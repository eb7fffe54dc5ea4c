"""``pointlab perf stations``: what a study server with N robot stations delivers (docs/stations.md).

Two modes, each a fresh server (``pointlab act server``, a SQLite store unless ``db_url``) with its
stations as separate processes and scripted participants (``ui.stations_participant``) in this one:

- **sim stations** (``counts``, e.g. 1,2,4): real ``pointlab act station`` processes (sim arm and
  camera, ROS node set on their own domains). Per N: judged trials per hour and its ratio to N = 1 in
  the same run; the dispatch latency (a block's request -> its station reset and ready); the trial's
  wall time at the server against the station's own (``timings_s.total``): what the server and Zenoh
  add; and the point-to-arm-command latency the stations measured (``timings_s.point_to_command``,
  the single-process path: the model's point never crosses the server).
- **simulated fleet** (``fleet``): ``pointlab sim fleet`` (``sim_mock/fleet.py``: no rendering, trial
  and reset times drawn around real ones, scaled by ``time_scale``) with ``participants`` scripted
  participants polling like a page. Reports throughput, dispatch latency, the server's overhead per
  trial and the server's CPU share (one core = 1.0): where it saturates.

Run timing is wall-clock on this machine; compare rows of one run only.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from pointlab.benchmark.perfstats import summarize
from pointlab.bridge.study.store import Store

from .serve import free_port
from .stations_participant import ScriptedParticipant

__all__ = ["measure_stations"]

POINTLAB = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()"]
TOKEN = "perf-stations-operator"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _ms(values) -> dict:
    return summarize(values, ("n", "p50", "p90", "p99"), scale=1e3, digits=1)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Run:
    """One server with its station processes (a context manager; everything is stopped on exit)."""

    def __init__(self, folder: Path, db: str | None) -> None:
        self.folder, self.zport, self.wport = folder, free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.wport}"
        self.db = db or str(folder / "study.sqlite")
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "_Run":
        self.server = self._spawn(
            "server",
            ["act", "server", "--db", self.db, "--listen", f"tcp/127.0.0.1:{self.zport}", "--port", str(self.wport)],
            {"POINTLAB_OPERATOR_TOKEN": TOKEN},
        )
        return self

    def _spawn(self, tag: str, args: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.folder / f"{tag}.log", "w")
        p = subprocess.Popen(
            [*POINTLAB, *args], env={**os.environ, **(env or {})}, cwd=self.folder, stdout=log, stderr=subprocess.STDOUT
        )
        self.procs.append(p)
        return p

    def station(self, name: str, domain: int, camera_fps: float, time_scale: float) -> None:
        self._spawn(
            name,
            [
                "act", "station", "--connect", f"tcp/127.0.0.1:{self.zport}", "--name", name,
                "--journal", str(self.folder / f"{name}.sqlite"), "--time-scale", str(time_scale),
                "--camera-fps", str(camera_fps), "--live-hz", "1", "--domain-id", str(domain),
            ],
            {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"},
        )  # fmt: skip

    def console(self) -> dict | None:
        try:
            return httpx.get(f"{self.base}/api/console", headers=AUTH, timeout=10).json()
        except (httpx.HTTPError, ValueError):
            return None

    def wait_idle(self, n: int, deadline_s: float) -> None:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            c = self.console()
            if c and sum(s["status"] == "idle" for s in c["stations"]) >= n:
                return
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"a process of the run exited early; see the logs in {self.folder}")
            time.sleep(0.2)
        raise RuntimeError(f"{n} stations were not idle within {deadline_s:.0f} s; see the logs in {self.folder}")

    def study(self, participants: int, trials_per_agent: int) -> dict:
        body = {
            "agents": ["sim-oracle", "sim-noisy"],
            "trials_per_agent": trials_per_agent,
            "participants": participants,
            "reveal_low_s": 0.0,
            "reveal_high_s": 0.0,
        }
        return httpx.post(f"{self.base}/api/studies", headers=AUTH, json=body, timeout=60).json()

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _participants(run: _Run, tokens: list[str], poll_s: float, deadline_s: float) -> tuple[list, float]:
    async def all_of() -> list:
        people = [ScriptedParticipant(run.base, t, poll_s=poll_s, deadline_s=deadline_s) for t in tokens]
        return await asyncio.gather(*(p.run() for p in people))

    t0 = time.monotonic()
    logs = asyncio.run(all_of())
    return logs, time.monotonic() - t0


def _summary(run: _Run, study_id: int, logs: list, wall_s: float, cpu_s: float) -> dict:
    store = Store(run.db, create=False)
    try:
        rows = store.trials(study_id=study_id)
    finally:
        store.close()
    judged = [r for r in rows if r["outcome"] in ("succeeded", "failed")]
    station_total = {r["id"]: (r.get("timings_s") or {}).get("total") for r in rows}
    server_trial = [s for lg in logs for s in lg.trial_s]
    station_trial = [v for v in station_total.values() if isinstance(v, (int, float))]
    p2c = [(r.get("timings_s") or {}).get("point_to_command") for r in rows]
    # what the server, Zenoh and the HTTP hop add to each trial: its wall time at the participant
    # minus the station's own measure of the same trial
    added = [
        s - station_total[t["trial_id"]]
        for lg in logs
        for s, t in zip(lg.trial_s, lg.trials)
        if isinstance(station_total.get(t["trial_id"]), (int, float))
    ]
    return {
        "participants": len(logs),
        "finished": sum(lg.finished for lg in logs),
        "judged_trials": len(judged),
        "wall_s": round(wall_s, 1),
        "judged_trials_per_hour": round(len(judged) / wall_s * 3600, 1) if wall_s > 0 else None,
        "dispatch_ms": _ms([s for lg in logs for s in lg.block_latency_s]),
        "trial_at_server_ms": _ms(server_trial),
        "trial_at_station_ms": _ms(station_trial),
        "server_added_ms": _ms(added),
        "point_to_command_ms": _ms([v for v in p2c if isinstance(v, (int, float))]),
        "server_cpu_cores": round(cpu_s / wall_s, 3) if wall_s > 0 else None,
        "waits": sum(lg.waits for lg in logs),
    }


def measure_stations(
    counts: list[int],
    *,
    participants_per_station: int = 2,
    trials_per_agent: int = 2,
    camera_fps: float = 5.0,
    time_scale: float = 0.05,
    first_domain: int = 70,
    fleet: int = 0,
    fleet_participants: int = 500,
    fleet_time_scale: float = 0.02,
    db_url: str | None = None,
    deadline_s: float = 900.0,
) -> dict:
    """Run the modes of the module docstring; returns ``{"sim_stations": [...], "fleet": {...}}``.

    Raises:
        RuntimeError: a process exited early or stations did not come up (its log folder is named).
    """
    out: dict = {"sim_stations": [], "fleet": None}
    for n in counts:
        with tempfile.TemporaryDirectory(prefix=f"pointlab-perf-stations-{n}-") as tmp, _Run(Path(tmp), db_url) as run:
            for i in range(n):
                run.station(f"st{i}", first_domain + i, camera_fps, time_scale)
            run.wait_idle(n, 240)
            study = run.study(n * participants_per_station, trials_per_agent)
            cpu0 = _cpu_s(run.server.pid)
            logs, wall = _participants(run, study["tokens"], 0.2, deadline_s)
            row = {"stations": n, **_summary(run, study["study_id"], logs, wall, _cpu_s(run.server.pid) - cpu0)}
            out["sim_stations"].append(row)
    if out["sim_stations"]:
        base = out["sim_stations"][0]["judged_trials_per_hour"] or 0
        for row in out["sim_stations"]:
            row["throughput_ratio"] = round(row["judged_trials_per_hour"] / base, 2) if base else None
    if fleet:
        with tempfile.TemporaryDirectory(prefix="pointlab-perf-fleet-") as tmp, _Run(Path(tmp), db_url) as run:
            run._spawn(
                "fleet",
                ["sim", "fleet", "--connect", f"tcp/127.0.0.1:{run.zport}", "--stations", str(fleet),
                 "--time-scale", str(fleet_time_scale)],
            )  # fmt: skip
            run.wait_idle(fleet, 240)
            study = run.study(fleet_participants, trials_per_agent)
            cpu0 = _cpu_s(run.server.pid)
            logs, wall = _participants(run, study["tokens"], 1.0, deadline_s)
            out["fleet"] = {
                "stations": fleet,
                "time_scale": fleet_time_scale,
                **_summary(run, study["study_id"], logs, wall, _cpu_s(run.server.pid) - cpu0),
            }
    return out
