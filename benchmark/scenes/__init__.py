"""3D scenes for the video and PinpointQA benchmarks: one scene model and its readers.

``load_scenes(path) -> list[Scene]`` reads the VSI-Bench meta format, ReVSI box files, ScanNet and
ScanNet++ scene folders (see ``loader``). Lengths are metres, z up.
"""

from .errors import SceneFormatError
from .loader import load_scenes
from .mesh import read_scannet_scene, read_scannetpp_scene
from .model import OrientedBox, Scene, SceneObject
from .revsi import read_revsi_boxes
from .vsibench import read_vsibench_meta

__all__ = [
    "load_scenes",
    "Scene",
    "SceneObject",
    "OrientedBox",
    "SceneFormatError",
    "read_vsibench_meta",
    "read_revsi_boxes",
    "read_scannet_scene",
    "read_scannetpp_scene",
]
