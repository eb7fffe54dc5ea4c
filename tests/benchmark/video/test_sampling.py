"""Samplers: uniform with endpoints, ReVSI nested 64/32/16, all; values worked out by hand."""

import pytest

from pointlab.benchmark.video.sampling import (
    nested_indices,
    nested_selections,
    parse_budget,
    sample_frames,
    uniform_indices,
    uniform_subset,
)


def test_uniform_hand_values():
    assert uniform_indices(10, 4) == [0, 3, 6, 9]  # linspace(0, 9, 4) = 0, 3, 6, 9
    assert uniform_indices(11, 3) == [0, 5, 10]
    assert uniform_indices(100, 2) == [0, 99]
    assert uniform_indices(5, 1) == [0]
    assert uniform_indices(5, 8) == [0, 1, 2, 3, 4]  # budget above the video: all frames
    with pytest.raises(ValueError):
        uniform_indices(0, 3)
    with pytest.raises(ValueError):
        uniform_subset([1, 2], 0)


def test_nested_on_28_real_frames_by_hand():
    # 64 and 32 exceed 28 frames -> all; 16 = positions rint(k * 27/15): 0, 1.8, 3.6, 5.4, ... 27
    assert nested_indices(28, 64) == list(range(28))
    assert nested_indices(28, 32) == list(range(28))
    assert nested_indices(28, 16) == [0, 2, 4, 5, 7, 9, 11, 13, 14, 16, 18, 20, 22, 23, 25, 27]


def test_nested_subsets_share_span():
    for total in (65, 100, 127, 1000, 9000):
        s64, s32, s16 = (set(nested_indices(total, b)) for b in (64, 32, 16))
        assert len(s64) == 64 and len(s32) == 32 and len(s16) == 16
        assert s16 <= s32 <= s64
        assert min(s16) == 0 and max(s16) == total - 1
    # 8 is below the chain: uniform over the 16-frame set, so nested too
    assert set(nested_indices(1000, 8)) <= set(nested_indices(1000, 16))


def test_nested_differs_from_plain_uniform():
    # plain uniform 32 over 1000 frames is not a subset of plain uniform 64; nested is by construction
    assert not set(uniform_indices(1000, 32)) <= set(uniform_indices(1000, 64))


def test_selection_records_sampler_and_budget():
    sel = sample_frames(28, "16")
    assert (sel.sampler, sel.budget, sel.num_frames, sel.total) == ("nested", 16, 16, 28)
    assert sample_frames(28, "all").to_dict()["indices"] == list(range(28))
    assert sample_frames(28, "all", "uniform").sampler == "all"
    sels = nested_selections(2000)
    assert list(sels) == ["16", "32", "64", "all"]
    with pytest.raises(ValueError):
        sample_frames(28, "16", "random")
    for bad in ("0", "-3", "many", 1.5):
        with pytest.raises(ValueError):
            parse_budget(bad)
