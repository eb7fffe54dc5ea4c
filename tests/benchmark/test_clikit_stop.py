"""``clikit.wait_until_stopped``: a long-running command (act station, sim fleet) stops on SIGINT and
SIGTERM even when it was started with SIGINT ignored (a background job of a script, a test runner's
worker: CI once waited a minute on a station that never saw its SIGINT)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

# "ready" is printed once the handlers are in place: a signal sent before would meet the inherited ones
CODE = (
    "from pointlab.benchmark.clikit import wait_until_stopped; "
    "wait_until_stopped(ready=lambda: print('ready', flush=True)); print('stopped', flush=True)"
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_waiting_command_stops_on_the_signal_even_if_it_started_with_sigint_ignored(sig):
    proc = subprocess.Popen(
        [sys.executable, "-c", CODE],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0 and out.strip() == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
