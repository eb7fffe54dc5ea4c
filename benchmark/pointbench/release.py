"""Files of a Point-Bench release found by name, in folders or zip archives.

The Hugging Face release (``PointArena/pointarena-data``) ships ``data.json`` beside
``selected_images.zip`` and ``selected_masks.zip``; the PointArena repository's layout has
``images/<category>/`` and ``masks/`` folders. lmms-eval finds every file by its basename, NFC-normalised,
with a cp437 -> UTF-8 recovery for archives written without the UTF-8 flag (``tasks/pointbench/utils.py``);
so does ``ReleaseFiles``: a name is looked up in the folder layout first, then in every file below the
release folder, then in every ``*.zip`` there. Members are read in place (``zipfile.Path``), never
extracted.
"""

from __future__ import annotations

import unicodedata
import zipfile
from pathlib import Path
from typing import IO, Union

__all__ = ["ReleaseFiles", "FileRef", "open_binary", "file_key", "IMAGE_SUFFIXES", "MASK_SUFFIXES"]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif")
MASK_SUFFIXES = (".png", ".bmp", ".tif", ".tiff", ".gif", ".jpg", ".jpeg", ".webp")

#: a file of a release: a path on disk or a member of a zip archive
FileRef = Union[Path, zipfile.Path]


def _key(name: str) -> str:
    return unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1])


def open_binary(ref: FileRef) -> IO[bytes]:
    """Open a file of a release for reading bytes (``OSError`` when it cannot be)."""
    if isinstance(ref, zipfile.Path):
        try:
            return ref.open("rb")
        except (KeyError, zipfile.BadZipFile) as e:
            raise OSError(f"cannot read {ref}: {e}") from e
    return open(ref, "rb")


def file_key(ref: FileRef) -> tuple[str, int]:
    """``(identity, modification time ns)`` of a file of a release, for caches."""
    if isinstance(ref, zipfile.Path):
        assert ref.root.filename is not None  # ReleaseFiles opens its zips from files
        archive = Path(ref.root.filename)
        return f"{archive.resolve()}::{ref.at}", archive.stat().st_mtime_ns
    p = Path(ref)
    return str(p), p.stat().st_mtime_ns


class ReleaseFiles:
    """Basename lookup over a release folder (files and zip members; module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._files: dict[str, Path] | None = None
        self._members: dict[str, zipfile.Path] | None = None

    def _index(self) -> None:
        files: dict[str, Path] = {}
        members: dict[str, zipfile.Path] = {}
        for p in sorted(self.root.rglob("*")):
            if p.is_file() and p.suffix.lower() != ".zip":
                files.setdefault(_key(p.name), p)
        for archive in sorted(self.root.rglob("*.zip")):
            try:
                zf = zipfile.ZipFile(archive)
            except (zipfile.BadZipFile, OSError):
                continue  # an unreadable archive only loses its own files
            for info in zf.infolist():
                if info.is_dir():
                    continue
                ref = zipfile.Path(zf, at=info.filename)
                base = _key(info.filename)
                members.setdefault(base, ref)
                if not info.flag_bits & 0x800:  # zipfile decoded the name as cp437
                    try:
                        members.setdefault(_key(info.filename.encode("cp437").decode("utf-8")), ref)
                    except (UnicodeEncodeError, UnicodeDecodeError):
                        pass
        self._files, self._members = files, members

    def find(self, name: str, *candidates: Path) -> FileRef | None:
        """The file called ``name``: the first existing ``candidates`` path, else the first file of that
        basename below the root, else a zip member of that basename; ``None`` when there is none."""
        for c in candidates:
            if c.is_file():
                return c
        if self._files is None or self._members is None:
            self._index()
        files, members = self._files, self._members
        assert files is not None and members is not None  # _index set both
        key = _key(name)
        return files.get(key) or members.get(key)
