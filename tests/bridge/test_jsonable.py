"""Every command prints strict JSON: NaN and infinities become null, numpy values plain numbers."""

import json

import numpy as np

from pointlab.bridge.cligroups import print_json
from pointlab.bridge.jsonable import finite_json


def test_finite_json():
    obj = {"a": float("nan"), "b": [1.5, float("inf"), np.float32(2.5)], "c": np.array([[1, 2]]), "d": (np.int64(3),)}
    assert finite_json(obj) == {"a": None, "b": [1.5, None, 2.5], "c": [[1, 2]], "d": [3]}


def test_print_json_is_strict(capsys):
    print_json({"mean": float("-inf"), "x": np.nan})
    out = capsys.readouterr().out
    assert json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) == {"mean": None, "x": None}
