"""The human-reference relay: the operator console's view of the open requests of the human agent.

The human reference (``benchmark.agents.HumanAgent``) is an agent like the others for the pointing
node; this relay shows its open requests to the operator (instruction and the frame as JPEG,
encoded once per request since the console polls) and passes the operator's click back.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

from pointlab.bridge.ros.live_view import encode_jpeg

__all__ = ["HumanRelay"]


class HumanRelay:
    """``bridge.trials.ports.HumanRelayPort`` over a human agent (``pending()``, ``answer(request_id, u, v)``),
    or over nothing (no human reference in this session: no requests, every answer refused)."""

    def __init__(self, human=None, *, jpeg_quality: int = 80) -> None:
        self.human, self.jpeg_quality = human, jpeg_quality
        self._lock = threading.Lock()
        self._jpegs: dict[Any, str] = {}  # by request id, as the human port gives it

    def pending(self, with_images: bool = True) -> list[dict]:
        """``[{"request_id", "instruction", "jpeg_b64", "width", "height"}]``, oldest first;
        ``with_images=False`` leaves ``jpeg_b64`` out (and encodes nothing: cheap on an event loop)."""
        if self.human is None:
            return []
        out = []
        for req in self.human.pending():
            get = req.get if isinstance(req, dict) else (lambda k, r=req: getattr(r, k, None))
            rid = get("request_id")
            image = get("image_rgb") if get("image_rgb") is not None else get("image")
            with self._lock:
                jpeg_b64 = get("jpeg_b64") or self._jpegs.get(rid)
            if jpeg_b64 is None and image is not None and with_images:
                jpeg_b64 = base64.b64encode(encode_jpeg(image, self.jpeg_quality)).decode("ascii")
                with self._lock:
                    self._jpegs[rid] = jpeg_b64
            width = get("width") if get("width") is not None else (image.shape[1] if image is not None else None)
            height = get("height") if get("height") is not None else (image.shape[0] if image is not None else None)
            out.append(
                {
                    "request_id": rid,
                    "instruction": get("instruction"),
                    "jpeg_b64": jpeg_b64,
                    "width": width,
                    "height": height,
                }
            )
        open_ids = {r["request_id"] for r in out}
        with self._lock:
            for rid in [r for r in self._jpegs if r not in open_ids]:
                del self._jpegs[rid]
        return out

    def answer(self, request_id: str, u: float, v: float) -> bool:
        """The operator clicked ``(u, v)`` (original-image pixels); ``False`` for an unknown request."""
        return False if self.human is None else bool(self.human.answer(request_id, u, v))

    def decline(self, request_id: str) -> bool:
        """The operator gives no point (``HumanAgent.decline``); ``False`` for an unknown request."""
        return False if self.human is None else bool(self.human.decline(request_id))
