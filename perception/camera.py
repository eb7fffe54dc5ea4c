"""The one camera interface every source implements, and the registry that builds them from a spec.

Shape after LeRobot's ``Camera``: ``connect()``, ``read()``, ``disconnect()``, usable as a context
manager. A source is named by a spec string on the command line and in configs:

====================  ==============================================================
``sim``               the simulated tabletop of ``pointlab.sim_mock`` (rendered RGB-D; an entry point)
``replay:DIR``        a folder of ``NNNNNN-color.png`` / ``NNNNNN-depth.png`` + ``camera_params.json``
``realsense[:SERIAL]``  an Intel RealSense through pyrealsense2, depth aligned to colour
``bag:PATH``          a recording: a ROS 2 bag of the realsense-ros topics (a rosbag2 folder,
                      ``.mcap``, or ``.db3``: pointlab's trial recordings, a lab's ``ros2 bag
                      record``; ``rosbag_camera``) or a librealsense recording (``.bag``, or a
                      ``.db3`` without those topics); ``bag:PATH#rate=R,loop=L``: played at the
                      recorded rate times R (default 1; 0 or ``max``: unpaced), looping unless
                      ``loop=0`` (``playback``)
====================  ==============================================================

Hardware SDKs are imported only inside the source that needs them.
"""

from __future__ import annotations

import pkgutil
from abc import ABC, abstractmethod
from typing import Self

from .errors import CameraNotConnectedError, CameraSourceError
from .frame import RGBDFrame

__all__ = ["Camera", "make_camera", "CAMERA_SOURCES", "ENTRY_POINT_GROUP", "camera_sources", "register_camera_source"]


class Camera(ABC):
    """An RGB-D source. Subclasses implement ``_connect``, ``_read`` and ``_disconnect``."""

    spec: str = ""

    def __init__(self) -> None:
        self._connected = False

    @property
    def is_connected(self) -> bool:
        return self._connected

    def connect(self) -> Self:
        """Open the source. Raises ``CameraSourceError`` when it cannot be opened."""
        if not self._connected:
            self._connect()
            self._connected = True
        return self

    def read(self) -> RGBDFrame:
        """Return the next frame (blocking until one is available).

        Raises:
            CameraNotConnectedError: ``connect()`` was not called.
            CameraSourceError: the source failed to deliver a valid frame.
        """
        if not self._connected:
            raise CameraNotConnectedError(f"camera {self.spec or type(self).__name__} is not connected")
        return self._read()

    def disconnect(self) -> None:
        if self._connected:
            self._connected = False
            self._disconnect()

    def __enter__(self) -> "Camera":
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.disconnect()

    @abstractmethod
    def _connect(self) -> None: ...

    @abstractmethod
    def _read(self) -> RGBDFrame: ...

    def _disconnect(self) -> None:
        return None


# type string -> "module:factory"; factories take the text after the first ':' (or None).
# Entries are import paths so that `pointlab score ...` never imports pyrealsense2 or the sim.
CAMERA_SOURCES: dict[str, str] = {
    "replay": "pointlab.perception.replay:ReplayCamera.from_spec",
    "realsense": "pointlab.perception.realsense:RealSenseCamera.from_spec",
    "bag": "pointlab.perception.rosbag_camera:bag_camera",
}
# Sources of other packages (the sim's ``sim`` and ``sim-board``, a lab's own) register under this
# entry-point group in their pyproject.toml; they are found in every process, whatever was imported.
ENTRY_POINT_GROUP = "pointlab.camera_sources"


def register_camera_source(kind: str, target: str) -> None:
    """Add a source type at run time: ``target`` is ``"package.module:callable"`` taking the spec
    argument (an installed package registers under ``ENTRY_POINT_GROUP`` instead)."""
    CAMERA_SOURCES[kind] = target


def camera_sources() -> dict[str, str]:
    """Every known source type -> its ``"module:factory"``: the built-ins, the entry points of
    ``ENTRY_POINT_GROUP``, and ``register_camera_source`` calls (the later wins)."""
    from importlib.metadata import entry_points

    return {**{ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}, **CAMERA_SOURCES}


def make_camera(spec: str, **kwargs) -> Camera:
    """Build (not connect) the camera named by ``spec`` (see the module docstring).

    Raises:
        CameraSourceError: unknown source type or bad argument.
    """
    kind, sep, arg = spec.partition(":")
    sources = camera_sources()
    if kind not in sources:
        raise CameraSourceError(f"unknown camera source {kind!r}; known: {', '.join(sorted(sources))}")
    factory = pkgutil.resolve_name(sources[kind])
    cam = factory(arg if sep else None, **kwargs)
    cam.spec = spec
    return cam
