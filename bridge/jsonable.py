"""Strict JSON values: what every command prints and every JSON API answers."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["finite_json"]


def finite_json(obj: Any) -> Any:
    """``obj`` with numpy scalars and arrays as plain Python values and every non-finite float as
    ``None``: JSON has no NaN or infinity (browsers and strict parsers reject them), and a stored
    model answer may hold one."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    elif isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj
