"""Small file helpers shared by the scene readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import SceneFormatError


def read_json(path: Path) -> Any:
    """Parse a JSON file; a missing or corrupt file raises ``SceneFormatError``."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError as e:
        raise SceneFormatError(f"{path}: file not found") from e
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SceneFormatError(f"{path}: not readable JSON ({e})") from e


def dataset_from_scene_id(scene_id: str) -> str:
    """Guess the source dataset from the shape of a scene id.

    ``sceneXXXX_YY`` is ScanNet, ten hex digits ScanNet++, all digits ARKitScenes; anything else
    is ``unknown``. Used only where a file does not say (the ReVSI box files).
    """
    import re

    if re.fullmatch(r"scene\d{4}_\d{2}", scene_id):
        return "scannet"
    if re.fullmatch(r"[0-9a-f]{10}", scene_id):
        return "scannetpp"
    if re.fullmatch(r"\d+", scene_id):
        return "arkitscenes"
    return "unknown"
