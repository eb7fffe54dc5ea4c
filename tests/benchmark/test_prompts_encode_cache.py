"""A read-only image is encoded once per encoding and the kept data URL handed out again; writable
images, and read-only views of writable arrays, are encoded on every call (their pixels can change)."""

from __future__ import annotations

import numpy as np

from pointlab.benchmark import prompts
from pointlab.benchmark.prompts import data_url_to_image, image_to_data_url


def _image(value: int) -> np.ndarray:
    img = np.zeros((24, 32, 3), np.uint8)
    img[..., 0] = value
    return img


def _red(url: str) -> float:
    return float(data_url_to_image(url)[..., 0].mean())


def test_a_read_only_image_is_encoded_once(monkeypatch):
    calls = []
    real = prompts._encode
    monkeypatch.setattr(prompts, "_encode", lambda img, enc: calls.append(enc) or real(img, enc))
    img = _image(200)
    img.flags.writeable = False
    first = image_to_data_url(img)
    assert image_to_data_url(img) is first and calls == ["jpeg"]
    assert image_to_data_url(img, "png") != first and calls == ["jpeg", "png"]
    assert abs(_red(first) - 200) < 3


def test_images_that_can_change_are_encoded_each_time():
    img = _image(200)
    assert abs(_red(image_to_data_url(img)) - 200) < 3
    img[..., 0] = 50  # writable: changed in place, the next URL shows the change
    assert abs(_red(image_to_data_url(img)) - 50) < 3
    view = img.view()
    view.flags.writeable = False
    assert abs(_red(image_to_data_url(view)) - 50) < 3
    img[..., 0] = 120  # the read-only view changed through its writable base
    assert abs(_red(image_to_data_url(view)) - 120) < 3
