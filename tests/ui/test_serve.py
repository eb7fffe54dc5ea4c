"""A taken port is a one-line error before anything starts (no session, no URL for another server)."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from pointlab.bridge.cli import app


@pytest.fixture
def taken_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]


@pytest.mark.parametrize("argv", [["act"], ["bench", "arena"]])
def test_taken_port_is_refused_before_start(taken_port, argv, tmp_path):
    r = CliRunner().invoke(app, argv + ["--port", str(taken_port), "--db", str(tmp_path / "x.sqlite")])
    assert r.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{taken_port}" in r.output and "http://" not in r.output
    assert not (tmp_path / "x.sqlite").exists()  # nothing was started


def test_missing_curated_folder(tmp_path):
    r = CliRunner().invoke(app, ["bench", "arena", "--port", "0", "--images", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "is not a folder" in r.output


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_bad_time_scale_is_refused(value, tmp_path):
    r = CliRunner().invoke(
        app, ["act", "trials", "--agent", "sim-oracle", "--db", str(tmp_path / "t.sqlite"), "--time-scale", value]
    )
    assert r.exit_code == 2, r.output


def test_short_operator_token_is_refused_before_start(tmp_path):
    r = CliRunner().invoke(app, ["act", "--port", "0", "--db", str(tmp_path / "x.sqlite"), "--operator-token", "tok"])
    assert r.exit_code == 2 and "at least 8 characters" in r.output
    assert not (tmp_path / "x.sqlite").exists()
