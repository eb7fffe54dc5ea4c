"""RGB-D frames, camera sources, deprojection and the camera-to-base calibration."""

from .camera import CAMERA_SOURCES, Camera, make_camera
from .deproject import DepthRule, Deprojection, deproject_pixel
from .errors import CalibrationFileError, CameraNotConnectedError, CameraSourceError, EndOfRecording, PerceptionError
from .extrinsics import Calibration, RigidTransform, load_calibration, save_calibration
from .frame import CAMERA_OPTICAL_FRAME, Intrinsics, RGBDFrame

__all__ = [
    "CAMERA_SOURCES",
    "Camera",
    "make_camera",
    "DepthRule",
    "Deprojection",
    "deproject_pixel",
    "CalibrationFileError",
    "CameraNotConnectedError",
    "CameraSourceError",
    "EndOfRecording",
    "PerceptionError",
    "Calibration",
    "RigidTransform",
    "load_calibration",
    "save_calibration",
    "CAMERA_OPTICAL_FRAME",
    "Intrinsics",
    "RGBDFrame",
]
