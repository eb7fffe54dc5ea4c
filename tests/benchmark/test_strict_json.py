"""Every command prints strict JSON: NaN and infinities become null, numpy values plain numbers."""

import json

import numpy as np

from pointlab.benchmark.clikit import print_json
from pointlab.benchmark.records import dumps_json, finite_json


def test_finite_json():
    obj = {"a": float("nan"), "b": [1.5, float("inf"), np.float32(2.5)], "c": np.array([[1, 2]]), "d": (np.int64(3),)}
    assert finite_json(obj) == {"a": None, "b": [1.5, None, 2.5], "c": [[1, 2]], "d": [3]}


def test_print_json_is_strict(capsys):
    print_json({"mean": float("-inf"), "x": np.nan})
    out = capsys.readouterr().out
    assert json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) == {"mean": None, "x": None}


def test_dumps_json_turns_pydantic_models_and_numpy_into_strict_json():
    from pydantic import BaseModel

    class Point(BaseModel):
        u: float
        v: float

    text = dumps_json({"p": Point(u=1.5, v=float("nan")), "a": np.array([np.inf, 2.0])}, compact=True)
    assert text == '{"p":{"u":1.5,"v":null},"a":[null,2.0]}'


def test_dumps_json_refuses_what_has_no_json_form():
    import pytest

    with pytest.raises(TypeError):
        dumps_json({"x": object()})
