"""The opening check and the closing files of a published bundle (a folder a paper cites): ``bundle.json`` and a SHA-256
manifest. Used by ``pointlab act publish`` (a Point-Act study) and ``pointlab bench arena-publish``
(a Point-Battle arena).

``bundle.json`` is ``{"format", "version", "created_unix_s", ...header, "files": [...]}`` (every file,
itself and the manifest included); ``MANIFEST.sha256`` lists ``<sha256>  <path>`` for every file but
itself, the format ``sha256sum -c MANIFEST.sha256`` checks.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from pointlab.benchmark.records import dumps_json

__all__ = ["finish_bundle", "not_empty", "MANIFEST"]

MANIFEST = "MANIFEST.sha256"


def not_empty(out: str | Path) -> str | None:
    """Why ``out`` cannot take a new export or bundle (it exists and is not an empty folder: nothing
    there is ever overwritten), or ``None``."""
    p = Path(out)
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        return f"{p} exists and is not an empty folder"
    return None


def finish_bundle(out: str | Path, *, fmt: str, version: int, **header: Any) -> dict[str, Any]:
    """Write ``bundle.json`` and ``MANIFEST.sha256`` into ``out`` (after every other file); returns
    ``bundle.json``'s content."""
    out = Path(out)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    bundle = {
        "format": fmt,
        "version": version,
        "created_unix_s": round(time.time(), 3),
        **header,
        "files": files + ["bundle.json", MANIFEST],
    }
    (out / "bundle.json").write_text(dumps_json(bundle, indent=1), encoding="utf-8")
    lines = [f"{hashlib.sha256((out / f).read_bytes()).hexdigest()}  {f}\n" for f in [*files, "bundle.json"]]
    (out / MANIFEST).write_text("".join(lines), encoding="utf-8")
    return bundle
