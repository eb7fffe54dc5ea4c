"""The one camera interface every source implements, and the registry that builds them from a spec.

Shape after LeRobot's ``Camera``: ``connect()``, ``read()``, ``disconnect()``, usable as a context
manager. A source is named by a spec string on the command line and in configs:

====================  ==============================================================
``sim``               the simulated tabletop of ``pointlab.sim_mock`` (rendered RGB-D)
``replay:DIR``        a folder of ``NNNNNN-color.png`` / ``NNNNNN-depth.png`` + ``camera_params.json``
``realsense[:SERIAL]``  an Intel RealSense through pyrealsense2, depth aligned to colour
``bag:PATH``          a RealSense ``.bag`` recording, played back not in real time
====================  ==============================================================

Hardware SDKs are imported only inside the source that needs them.
"""

from __future__ import annotations

import pkgutil
from abc import ABC, abstractmethod

from .errors import CameraNotConnectedError, CameraSourceError
from .frame import RGBDFrame

__all__ = ["Camera", "make_camera", "CAMERA_SOURCES", "register_camera_source"]


class Camera(ABC):
    """An RGB-D source. Subclasses implement ``_connect``, ``_read`` and ``_disconnect``."""

    spec: str = ""

    def __init__(self) -> None:
        self._connected = False

    @property
    def is_connected(self) -> bool:
        return self._connected

    def connect(self) -> "Camera":
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
    "bag": "pointlab.perception.realsense:BagCamera.from_spec",
    "sim": "pointlab.sim_mock.camera:SimCamera.from_spec",
}


def register_camera_source(kind: str, target: str) -> None:
    """Add a source type: ``target`` is ``"package.module:callable"`` taking the spec argument."""
    CAMERA_SOURCES[kind] = target


def make_camera(spec: str, **kwargs) -> Camera:
    """Build (not connect) the camera named by ``spec`` (see the module docstring).

    Raises:
        CameraSourceError: unknown source type or bad argument.
    """
    kind, sep, arg = spec.partition(":")
    if kind not in CAMERA_SOURCES:
        raise CameraSourceError(f"unknown camera source {kind!r}; known: {', '.join(sorted(CAMERA_SOURCES))}")
    factory = pkgutil.resolve_name(CAMERA_SOURCES[kind])
    cam = factory(arg if sep else None, **kwargs)
    cam.spec = spec
    return cam
