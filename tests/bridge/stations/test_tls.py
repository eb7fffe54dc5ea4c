"""The documented deployment's TLS (docs/stations.md "Security"): a study server listening on a tls/
endpoint with its certificate, a station that trusts the CA, and clients that do not get in.

The CA and the server certificate are made by ``trustme`` (a test CA, PyPI) for ``localhost``."""

from __future__ import annotations

import time

import pytest
import zenoh

from pointlab.bridge.stations.wire import zenoh_config
from tests.bridge.stations.support import free_port

pytestmark = pytest.mark.slow  # the refused clients wait out their connect timeout


@pytest.fixture
def tls_files(tmp_path):
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    return tmp_path


def test_a_station_trusting_the_ca_joins_over_tls_and_others_do_not(tls_files):
    port = free_port()
    server = zenoh.open(
        zenoh_config(
            mode="router",
            listen=[f"tls/localhost:{port}"],
            tls={"listen_certificate": str(tls_files / "cert.pem"), "listen_private_key": str(tls_files / "key.pem")},
        )
    )
    seen: list[str] = []
    sub = server.liveliness().declare_subscriber("pointlab/station/*", lambda s: seen.append(str(s.key_expr)))
    try:
        station = zenoh.open(
            zenoh_config(
                mode="client",
                connect=[f"tls/localhost:{port}"],
                tls={"root_ca_certificate": str(tls_files / "ca.pem")},
                connect_timeout_s=10,
            )
        )
        token = station.liveliness().declare_token("pointlab/station/t1")
        end = time.monotonic() + 15
        while "pointlab/station/t1" not in seen and time.monotonic() < end:
            time.sleep(0.02)
        assert seen == ["pointlab/station/t1"]
        # without the CA the server's certificate is not trusted; plain TCP to a TLS port is no handshake
        for endpoint, tls in ((f"tls/localhost:{port}", None), (f"tcp/127.0.0.1:{port}", None)):
            with pytest.raises(zenoh.ZError, match="Unable to connect"):
                zenoh.open(zenoh_config(mode="client", connect=[endpoint], tls=tls, connect_timeout_s=2))
        token.undeclare()
        station.close()
    finally:
        sub.undeclare()
        server.close()


@pytest.mark.ros  # the station runs its sim ROS 2 node set
def test_the_documented_deployment_runs_from_the_command_line(tls_files, tmp_path):
    """docs/stations.md "Security" as a lab runs it: `pointlab act server` on a tls/ endpoint with its
    certificate and a credentials file, a sim `pointlab act station` with the CA and its password in
    the environment joins (the console lists it idle); the same station with a wrong password is
    refused and exits 1 with one line after its --connect-timeout."""
    import os
    import signal
    import subprocess
    import sys

    import httpx

    from tests.bridge.stations.support import wait_for
    from tests.conftest import _reserve_domain

    cli = [sys.executable, "-c", "from pointlab.bridge.cli import main; main()"]
    zport, wport = free_port(), free_port()
    (tmp_path / "creds.txt").write_text("s1:right-password\n")
    env = {**os.environ, "POINTLAB_OPERATOR_TOKEN": "operator-token-tls", "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    server = subprocess.Popen(
        [
            *cli,
            "act",
            "server",
            "--db",
            str(tmp_path / "study.sqlite"),
            "--port",
            str(wport),
            "--listen",
            f"tls/localhost:{zport}",
            "--tls-cert",
            str(tls_files / "cert.pem"),
            "--tls-key",
            str(tls_files / "key.pem"),
            "--credentials",
            str(tmp_path / "creds.txt"),
            "--recordings",
            str(tmp_path / "at-server"),
        ],  # fmt: skip
        env=env,
        cwd=tmp_path,
        stdout=open(tmp_path / "server.log", "w"),
        stderr=subprocess.STDOUT,
    )
    domain, fd = _reserve_domain(child_processes_only=True)

    def station(password: str, timeout: str = "20") -> tuple[list, dict]:
        return [
            *cli, "act", "station", "--connect", f"tls/localhost:{zport}", "--tls-ca", str(tls_files / "ca.pem"),
            "--name", "s1", "--journal", str(tmp_path / f"s1-{password}.sqlite"), "--connect-timeout", timeout,
            "--camera-fps", "5", "--live-hz", "1",
        ], {**env, "ROS_DOMAIN_ID": str(domain), "POINTLAB_STATION_PASSWORD": password}  # fmt: skip

    good = None
    try:
        cmd, senv = station("right-password")
        good = subprocess.Popen(
            cmd, env=senv, cwd=tmp_path, stdout=open(tmp_path / "s1.log", "w"), stderr=subprocess.STDOUT
        )

        def listed() -> bool:
            try:
                c = httpx.get(
                    f"http://127.0.0.1:{wport}/api/console", headers={"Authorization": "Bearer operator-token-tls"}
                ).json()
            except httpx.HTTPError:
                return False
            return [(s["name"], s["status"]) for s in c["stations"]] == [("s1", "idle")]

        wait_for(listed, 180, "the station over TLS with its password")
        good.send_signal(signal.SIGINT)
        good.wait(60)
        cmd, senv = station("wrong-password", timeout="3")
        bad = subprocess.run(cmd, env=senv, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert bad.returncode == 1, bad.stderr[-2000:]
        assert "no study server at" in bad.stderr and "Traceback" not in bad.stderr
    finally:
        for p in (good, server):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
        os.close(fd)
