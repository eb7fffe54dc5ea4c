"""The sim scene's own demo script: pick-then-place instructions naming the default scene's objects.

Each item is ``{"instruction": str, "expected": {...}}`` where ``expected`` is what
``SimWorld.judge`` checks after the action (``{"action": "pick", "object": NAME}`` or
``{"action": "place", "object": NAME, "container"|"on"|"near": NAME}``). The script alternates pick and
place, so it runs in order from the initial layout (``world.reset()``); ``pointlab act trials``
runs it when no ``--instructions`` file is given.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["DEMO_SCRIPT", "write_demo_script", "demo_script"]


def _pick(text: str, obj: str) -> dict:
    return {"instruction": text, "expected": {"action": "pick", "object": obj}}


def _place_in(text: str, obj: str, container: str) -> dict:
    return {"instruction": text, "expected": {"action": "place", "object": obj, "container": container}}


def _place_on(text: str, obj: str, support: str) -> dict:
    return {"instruction": text, "expected": {"action": "place", "object": obj, "on": support}}


def _place_near(text: str, obj: str, near: str) -> dict:
    return {"instruction": text, "expected": {"action": "place", "object": obj, "near": near}}


DEMO_SCRIPT: tuple[dict, ...] = (
    _pick("pick up the red cube", "red cube"),
    _place_in("put it in the blue bowl", "red cube", "blue bowl"),
    _pick("grab the yellow block", "yellow block"),
    _place_on("place it on top of the green cube", "yellow block", "green cube"),
    _pick("pick up the purple cube", "purple cube"),
    _place_near("put the purple cube next to the orange can", "purple cube", "orange can"),
    _pick("take the red block out of the bowl", "red cube"),
    _place_on("set it down on the purple cube", "red cube", "purple cube"),
    _pick("pick up the yellow block again", "yellow block"),
    _place_in("drop the yellow block into the bowl", "yellow block", "blue bowl"),
    _pick("pick up the green cube", "green cube"),
    _place_in("put the green cube in the bowl as well", "green cube", "blue bowl"),
)


def demo_script() -> list[dict]:
    """A fresh copy of ``DEMO_SCRIPT`` (dicts the caller may change)."""
    return json.loads(json.dumps(list(DEMO_SCRIPT)))


def write_demo_script(path: str | Path) -> Path:
    """Write ``DEMO_SCRIPT`` as JSONL (one ``{"instruction", "expected"}`` per line); returns the path."""
    path = Path(path)
    path.write_text("".join(json.dumps(item) + "\n" for item in DEMO_SCRIPT), encoding="utf-8")
    return path
