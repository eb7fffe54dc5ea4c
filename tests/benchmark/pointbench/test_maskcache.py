"""The bit-packed disk cache of decoded masks: a re-score reads no PNG, a damaged or stale entry is never
used, and scores are the same with and without it."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.pointbench import BenchItem
from pointlab.benchmark.pointbench import dataset as ds
from pointlab.benchmark.pointbench.maskcache import cache_dir
from pointlab.benchmark.pointbench.scoring import score_item


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("POINTLAB_CACHE_DIR", str(tmp_path / "cache"))
    ds.clear_mask_caches()
    yield tmp_path / "cache" / "masks"
    ds.clear_mask_caches()


def _mask_file(tmp_path, name="m.png", box=(5, 15, 3, 9), size=(20, 12)):
    w, h = size
    a = np.zeros((h, w), np.uint8)
    r0, r1, c0, c1 = box[2], box[3], box[0], box[1]
    a[r0:r1, c0:c1] = 255
    p = tmp_path / name
    Image.fromarray(a).save(p)
    return p, a > 127


def _entries(folder):
    return sorted(folder.rglob("*.plmk"))


def test_a_rescore_in_a_new_process_reads_the_packed_mask_not_the_png(cache, tmp_path, monkeypatch):
    p, want = _mask_file(tmp_path)
    first = ds.load_mask(p, 20, 12)
    assert np.array_equal(first, want) and len(_entries(cache)) == 1
    # 20 x 12 = 240 bits: a 13-byte header and 30 bytes
    assert _entries(cache)[0].stat().st_size == 13 + 30
    ds.clear_mask_caches()  # what a new process starts with

    def no_png(*a, **k):
        raise AssertionError("the PNG was decoded again")

    monkeypatch.setattr(ds.Image, "open", no_png)
    again = ds.load_mask(p, 20, 12)
    assert np.array_equal(again, want) and again.dtype == bool and not again.flags.writeable
    it = BenchItem("i", p, "q", "spatial", 20, 12, p)
    assert score_item(it, [[10.0, 5.0]]).value == 1.0 and score_item(it, [[1.0, 1.0]]).value == 0.0


def test_an_edited_mask_is_read_again(cache, tmp_path):
    p, _ = _mask_file(tmp_path)
    assert ds.load_mask(p)[5, 10]
    _, moved = _mask_file(tmp_path, box=(0, 4, 0, 4))
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 1_000_000))  # a new modification time
    ds.clear_mask_caches()
    got = ds.load_mask(p)
    assert np.array_equal(got, moved) and not got[5, 10] and len(_entries(cache)) == 2


@pytest.mark.parametrize("damage", ["truncate", "foreign", "empty"])
def test_a_damaged_entry_is_a_miss_and_is_written_again(cache, tmp_path, damage):
    p, want = _mask_file(tmp_path)
    ds.load_mask(p)
    (entry,) = _entries(cache)
    raw = entry.read_bytes()
    entry.write_bytes({"truncate": raw[:-1], "foreign": b"GIF89a" + raw[6:], "empty": b""}[damage])
    ds.clear_mask_caches()
    assert np.array_equal(ds.load_mask(p), want)
    assert entry.read_bytes() == raw  # rewritten whole


def test_each_mask_rule_has_its_own_entry(cache, tmp_path):
    p, _ = _mask_file(tmp_path)
    ds.load_mask(p, rule="pointlab")
    ds.load_mask(p, rule="pointarena")
    assert len(_entries(cache)) == 2


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("POINTLAB_CACHE_DIR", "off")
    assert cache_dir() is None
    ds.clear_mask_caches()
    p, want = _mask_file(tmp_path)
    assert np.array_equal(ds.load_mask(p), want)
    monkeypatch.delenv("POINTLAB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "pointlab" / "masks"


def test_an_unwritable_cache_folder_does_not_stop_scoring(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the cache folder would be: every write fails
    monkeypatch.setenv("POINTLAB_CACHE_DIR", str(blocker))
    ds.clear_mask_caches()
    p, want = _mask_file(tmp_path)
    assert np.array_equal(ds.load_mask(p), want)
    ds.clear_mask_caches()


def test_a_packed_mask_reads_every_pixel_as_the_array_does():
    from pointlab.benchmark.pointbench.maskcache import PackedMask

    rng = np.random.default_rng(3)
    m = rng.random((7, 13)) < 0.4  # 91 pixels: the last byte is partly padding
    pm = PackedMask.from_array(m)
    assert pm.shape == (7, 13) and pm.bits.size == 12
    assert all(pm[r, c] == m[r, c] for r in range(7) for c in range(13))
    assert np.array_equal(np.asarray(pm), m) and np.array_equal(pm.unpack(), m)
    other = rng.random((7, 13)) < 0.4
    assert np.array_equal((pm | PackedMask.from_array(other)).unpack(), m | other)
    with pytest.raises(IndexError):
        pm[7, 0]
    with pytest.raises(ValueError):
        PackedMask(pm.bits[:-1], (7, 13))
