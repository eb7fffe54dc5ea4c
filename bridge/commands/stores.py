"""Opening a study store for a command that only reads it (export, publish, compare, plan)."""

from __future__ import annotations

from pointlab.benchmark.clikit import fail

__all__ = ["read_store"]


def read_store(db: str, option: str | None = "--db"):
    """``Store(db, create=False)``: nothing is created or written to open it (an arena store, another
    program's file or a missing one is refused); a refusal is one line, exit 2, prefixed by ``option``."""
    from pointlab.bridge.study.store import Store, StoreError

    try:
        return Store(db, create=False)
    except StoreError as e:
        fail(f"{option}: {e}" if option else str(e), 2)
