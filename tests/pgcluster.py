"""A private PostgreSQL cluster for tests: ``initdb`` + ``pg_ctl`` in a temp folder, Unix socket only.

Debian's ``postgresql`` package puts the server binaries in ``/usr/lib/postgresql/<major>/bin``.
PostgreSQL refuses to run as root, so as root the cluster belongs to the ``postgres`` system user
(created by the package) and its commands run through ``runuser``. The server listens on no TCP
address at all (``listen_addresses = ''``): only on a socket in its own temp folder.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PgCluster", "PgUnavailable", "find_pg_bin"]


class PgUnavailable(RuntimeError):
    """No PostgreSQL server can be started here (the message says why)."""


def find_pg_bin() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``. Raises: PgUnavailable."""
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True):
        if (Path(d) / "initdb").exists():
            return Path(d)
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise PgUnavailable("PostgreSQL server binaries not found (apt-get install postgresql)")


class PgCluster:
    """``with PgCluster() as pg: pg.url`` -> ``postgresql+psycopg://pointlab@/pointlab?host=SOCKDIR``.

    Args:
        max_connections: server ``max_connections``.
        fsync: keep the server's fsync on (off makes tests faster; perf runs keep it on).
    """

    def __init__(self, *, max_connections: int = 300, fsync: bool = False) -> None:
        self.bin = find_pg_bin()
        self.max_connections, self.fsync = max_connections, fsync
        self.root = Path(tempfile.mkdtemp(prefix="pointlab-pg-"))
        self.data, self.sock = self.root / "data", self.root / "sock"
        self._user: str | None = None
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise PgUnavailable("running as root and there is no 'postgres' user to run the server as") from None
            self._user = "postgres"
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.sock.mkdir()
        if self._user:
            os.chown(self.sock, pwd.getpwnam(self._user).pw_uid, pwd.getpwnam(self._user).pw_gid)
        self.port = 5432

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://pointlab@/pointlab?host={self.sock}&port={self.port}"

    def _run(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self._user:
            cmd = ["runuser", "-u", self._user, "--", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if r.returncode != 0:
            raise PgUnavailable(f"{' '.join(args[:2])} failed: {(r.stderr or r.stdout).strip()[-500:]}")
        return r

    def start(self) -> "PgCluster":
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "pointlab", "-E", "UTF8", "--no-sync")
        self.resume()
        deadline = time.monotonic() + 30
        while True:
            try:
                self._run("createdb", "-h", str(self.sock), "-p", str(self.port), "-U", "pointlab", "pointlab")
                break
            except PgUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        return self

    def resume(self) -> None:
        """Start the server on the existing cluster (after ``start`` made it, or after ``pause``)."""
        opts = (
            f"-c listen_addresses='' -k {self.sock} -p {self.port} -c max_connections={self.max_connections} "
            f"-c fsync={'on' if self.fsync else 'off'} -c shared_buffers=64MB"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.root / "server.log"), "-w", "-t", "60", "start"
        )

    def pause(self) -> None:
        """Stop the server as an outage would (``-m fast``: open connections are cut, transactions in
        flight rolled back); the data stays for ``resume``."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "PgCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
