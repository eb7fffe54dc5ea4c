"""The storage port over the file system: the free space where a trial and its recording are written.

A trial that runs on the robot and cannot be stored is lost for the study (issue 20: 22 trials ran
on a full disk and were not stored). The station asks this port before a trial starts and the
machine again right before the motion (``bridge.trials.machine``, phase ``checking``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["DiskStorage"]


class DiskStorage:
    """``bridge.trials.ports.StoragePort``: the smallest free space, in bytes, of the file systems
    that hold ``paths`` (the store's file, the recordings folder). A path that does not exist yet is
    measured at its nearest existing parent.

    Raises (from ``free_bytes``):
        OSError: none of the paths can be measured.
    """

    def __init__(self, *paths: str | Path) -> None:
        self.paths = [Path(p) for p in paths]

    def free_bytes(self) -> int | None:
        if not self.paths:
            return None
        return min(shutil.disk_usage(_existing(p)).free for p in self.paths)


def _existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
