"""Point-Bench authoring under races and bad input (issue "clean failures"): a verdict is one
conditional update, so of 50 concurrent verdicts on one item exactly one wins and the export holds
only accepted items; an image holds at most ``MAX_ITEMS_PER_IMAGE`` live items; reference points
are finite and on the image."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.pointbench.annotation import MAX_ITEMS_PER_IMAGE, AnnotationError, AnnotationStore

H, W = 60, 80


@pytest.fixture
def store(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for k in range(3):
        Image.fromarray(np.full((H, W, 3), 40 * k, np.uint8)).save(images / f"img{k}.png")
    s = AnnotationStore(tmp_path / "bench")
    s.cids = s.add_folder(images)
    return s


def _mask():
    m = np.zeros((H, W), bool)
    m[20:40, 30:50] = True
    return m


def _item(store, cid, who="alice", category="spatial", **kw):
    # every model misses (the point is off the mask): the filter passes
    ask = store.record_ask(
        cid, "Point to the square", [{"alias": "Model 1", "model": "a", "points_px": [[2.0, 2.0]]}], who
    )
    return store.submit(cid=cid, ask_id=ask, category=category, instance_masks=[_mask()], drawn_by=who, **kw)["item_id"]


def test_fifty_concurrent_verdicts_on_one_item_exactly_one_wins(store):
    iid = _item(store, store.cids[0])
    other = _item(store, store.cids[1])
    store.verify(other, "carol", True)  # an accepted item already in the export
    start = threading.Barrier(50)
    wins, conflicts, errors = [], [], []

    def verdict(k: int) -> None:
        accept = k % 2 == 0  # half accept, half reject
        start.wait()
        try:
            store.verify(iid, f"verifier{k}", accept, "" if accept else "the mask misses the corner")
            wins.append(accept)
        except AnnotationError as e:
            (conflicts if e.status == 409 else errors).append(e)
        except Exception as e:  # a 500 in the web app
            errors.append(e)

    threads = [threading.Thread(target=verdict, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(wins) == 1 and len(conflicts) == 49
    item = store.item(iid)
    assert item["status"] == ("verified" if wins[0] else "rejected")
    gt = [json.loads(line) for line in (store.out / "gt.jsonl").read_text().splitlines()]
    data = json.loads((store.out / "data.json").read_text())
    ids = {e["annotation_id"] for e in data}
    assert ids == ({iid, other} if wins[0] else {other}) and len(gt) == len(ids)
    assert not list(store.out.glob("*.tmp")) and not list(store.out.glob(".*.tmp"))  # no temporary left


def test_concurrent_verdicts_on_different_items_all_land_in_the_export(store):
    items = [_item(store, store.cids[k % 3], who=f"drawer{k}") for k in range(6)]
    errors = []
    start = threading.Barrier(len(items))

    def accept(iid: str) -> None:
        start.wait()
        try:
            store.verify(iid, "vera", True)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=accept, args=(i,)) for i in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    data = json.loads((store.out / "data.json").read_text())
    assert {e["annotation_id"] for e in data} == set(items)


def test_an_image_holds_a_few_items_and_a_rejection_frees_a_place(store):
    cid = store.cids[2]
    first = [_item(store, cid) for _ in range(MAX_ITEMS_PER_IMAGE)]
    with pytest.raises(AnnotationError) as e:
        _item(store, cid)
    assert e.value.status == 409 and "at most 3" in str(e.value)
    assert len(list((store.state / "masks").glob("*.png"))) == MAX_ITEMS_PER_IMAGE  # the refused masks removed
    store.verify(first[0], "bob", False, "wrong object")
    _item(store, cid)  # the rejected item's place is free again


@pytest.mark.parametrize(
    "point",
    [[float("nan"), 3.0], [1.0, float("inf")], [W, 3.0], [-1.0, 3.0], [3.0, H + 5], [1e300, 2.0], ["a", 2], [1.0]],
)
def test_a_reference_point_off_the_image_or_not_a_number_is_refused(store, point):
    with pytest.raises(AnnotationError) as e:
        _item(store, store.cids[0], category="steerable", reference_points_px=[point])
    assert e.value.status == 400
    assert store.items() == []  # nothing stored


def test_a_reference_point_on_the_image_is_kept(store):
    iid = _item(store, store.cids[0], category="steerable", reference_points_px=[[0, 0], [W - 1, H - 1.0]])
    assert store.item(iid)["reference_points_px"] == [[0.0, 0.0], [79.0, 59.0]]
