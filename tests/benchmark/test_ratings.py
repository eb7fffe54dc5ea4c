"""Ratings: online Elo against a hand-worked sequence, Bradley-Terry against closed forms and a known
ordering on synthetic votes (with interval coverage over repeated draws), ties rules, ranks, errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pointlab.benchmark.ratings import (
    RatingsInputError,
    Vote,
    bradley_terry,
    compute_ratings,
    elo_online,
    elo_ratings,
    interval_ranks,
    load_votes_jsonl,
)


def V(a, b, w):
    return Vote(a, b, w)


# Worked by hand (K=32, base 10, scale 400, start 1000):
# 1) A beats B: E_A = 1/(1+10^0) = 0.5 -> A = 1000 + 32*0.5 = 1016, B = 984.
# 2) B beats C: E_B = 1/(1+10^((1000-984)/400)) = 1/(1+10^0.04) = 0.476990 -> B = 984 + 32*0.523010 = 1000.7363,
#    C = 1000 - 16.7363 = 983.2637.
# 3) A ties C (half): E_A = 1/(1+10^((983.2637-1016)/400)) = 1/(1+10^-0.081841) = 0.546980
#    -> A = 1016 + 32*(0.5-0.546980) = 1014.4966, C = 983.2637 + 1.5034 = 984.7671.
SEQ = [V("A", "B", "model_a"), V("C", "B", "model_b"), V("A", "C", "both_good")]


def test_elo_hand_worked_sequence_ties_half():
    r = elo_online(SEQ, k=32, ties="half")
    assert r["A"] == pytest.approx(1014.4966, abs=2e-3)
    assert r["B"] == pytest.approx(1000.7363, abs=2e-3)
    assert r["C"] == pytest.approx(984.7671, abs=2e-3)


def test_elo_ties_excluded_leave_ratings_after_step_two():
    r = elo_online(SEQ, k=32, ties="exclude")
    assert r == pytest.approx({"A": 1016.0, "B": 1000.7363, "C": 983.2637}, abs=2e-3)


def test_elo_pointarena_defaults_k2():
    # K=2: one win from equal ratings moves each side by 2 * 0.5 = 1 point.
    r = elo_online([V("x", "y", "model_b")])
    assert r == {"x": 999.0, "y": 1001.0}


def test_elo_is_order_dependent():
    a = elo_online([V("A", "B", "model_a"), V("A", "B", "model_b")], k=32)
    b = elo_online([V("A", "B", "model_b"), V("A", "B", "model_a")], k=32)
    # After A wins (1016/984) then loses: E_A = 1/(1+10^(-32/400)) = 0.545922, A = 1016 - 32*0.545922 = 998.5305
    assert a["A"] == pytest.approx(998.5305, abs=2e-3)
    assert b["A"] == pytest.approx(2000 - 998.5305, abs=2e-3)


def test_bt_two_models_closed_form():
    # MLE: P(A beats B) = 30/40 = 0.75 -> R_A - R_B = 400 log10(3) = 190.849; ratings centred on 1000.
    votes = [V("A", "B", "model_a")] * 20 + [V("B", "A", "model_b")] * 10 + [V("A", "B", "model_b")] * 10
    r = bradley_terry(votes, bootstrap_rounds=0)
    assert r["A"].rating == pytest.approx(1000 + 95.4243, abs=0.05)
    assert r["B"].rating == pytest.approx(1000 - 95.4243, abs=0.05)
    assert r["A"].games == r["B"].games == 40


def test_bt_ties_half_vs_exclude():
    votes = (
        [V("A", "B", "model_a")] * 30
        + [V("A", "B", "model_b")] * 10
        + [V("A", "B", "both_bad")] * 10
        + [V("B", "A", "both_good")] * 10
    )
    ex = bradley_terry(votes, ties="exclude", bootstrap_rounds=0)
    assert ex["A"].rating - ex["B"].rating == pytest.approx(400 * math.log10(3), abs=0.1)
    assert ex["A"].games == 40
    # half: A scores 30 + 10 = 40 of 60 -> p = 2/3 -> difference 400 log10(2) = 120.41
    half = bradley_terry(votes, ties="half", bootstrap_rounds=0)
    assert half["A"].rating - half["B"].rating == pytest.approx(400 * math.log10(2), abs=0.1)
    assert half["A"].games == 60


def _synthetic(true: dict[str, float], n: int, rng: np.random.Generator) -> list[Vote]:
    names = list(true)
    votes = []
    for _ in range(n):
        i, j = rng.choice(len(names), 2, replace=False)
        a, b = names[i], names[j]
        p_a = 1 / (1 + 10 ** ((true[b] - true[a]) / 400))
        votes.append(V(a, b, "model_a" if rng.random() < p_a else "model_b"))
    return votes


TRUE = {"m1": 1150.0, "m2": 1050.0, "m3": 950.0, "m4": 850.0}  # mean 1000 = the fit's gauge


def test_bt_recovers_known_ordering_and_ranks():
    votes = _synthetic(TRUE, 4000, np.random.default_rng(7))
    r = bradley_terry(votes, bootstrap_rounds=100, seed=1)
    assert sorted(r, key=lambda m: -r[m].rating) == ["m1", "m2", "m3", "m4"]
    for m, t in TRUE.items():
        assert abs(r[m].rating - t) < 30
        assert r[m].ci_low < r[m].rating < r[m].ci_high
    # 100-point gaps with ~2000 games per model: intervals separate, ranks 1..4
    assert [r[m].rank for m in TRUE] == [1, 2, 3, 4]


@pytest.mark.slow
def test_bt_interval_coverage_over_repeated_draws():
    rng = np.random.default_rng(2024)
    hits = total = 0
    for rep in range(40):
        votes = _synthetic(TRUE, 1500, rng)
        r = bradley_terry(votes, bootstrap_rounds=100, seed=rep)
        for m, t in TRUE.items():
            hits += r[m].ci_low <= t <= r[m].ci_high
            total += 1
    coverage = hits / total
    # nominal 95 %; with 160 intervals the binomial sd is ~1.7 %, percentile bootstrap runs a bit low
    assert 0.85 <= coverage <= 1.0, coverage


def test_interval_ranks_by_hand():
    # intervals: A [10, 20], B [15, 25], C [0, 5]: C is below both -> rank 3; A and B overlap -> rank 1
    assert interval_ranks([10, 15, 0], [20, 25, 5]) == [1, 1, 3]
    # D [30, 40] above all: A gets rank 2 (D only), C gets 4
    assert interval_ranks([10, 15, 0, 30], [20, 25, 5, 40]) == [2, 2, 4, 1]


def test_elo_bootstrap_intervals_bracket_point():
    votes = _synthetic(TRUE, 800, np.random.default_rng(3))
    r = elo_ratings(votes, k=4, bootstrap_rounds=50, seed=0)
    assert r["m1"].rating > r["m4"].rating
    assert r["m1"].ci_low < r["m1"].ci_high
    assert sum(x.games for x in r.values()) == 1600


def test_compute_ratings_output_shape_and_errors(tmp_path):
    out = compute_ratings([V("A", "B", "model_a")], "elo", bootstrap_rounds=0)
    assert out == {
        "A": {"rating": 1001.0, "ci_low": 1001.0, "ci_high": 1001.0, "rank": 1, "games": 1},
        "B": {"rating": 999.0, "ci_low": 999.0, "ci_high": 999.0, "rank": 2, "games": 1},
    }
    # (no bootstrap: zero-width intervals, A's lower bound 1001 > B's upper 999 -> B ranks 2)
    with pytest.raises(RatingsInputError):
        compute_ratings([], "glicko")
    with pytest.raises(RatingsInputError):
        compute_ratings([], "bt", ties="third")


def test_load_votes_reports_bad_lines(tmp_path):
    p = tmp_path / "votes.jsonl"
    p.write_text(json.dumps({"model_a": "a", "model_b": "b", "winner": "model_a"}) + "\n\n")
    assert load_votes_jsonl(p) == [V("a", "b", "model_a")]
    for bad, msg in [
        ("{not json", "not JSON"),
        ('{"model_a": "a", "model_b": "b"}', "winner"),
        ('{"model_a": "a", "model_b": "b", "winner": "tie"}', "not one of"),
        ('{"model_a": "a", "model_b": "a", "winner": "model_a"}', "itself"),
    ]:
        p.write_text(bad + "\n")
        with pytest.raises(RatingsInputError, match=msg):
            load_votes_jsonl(p)
    with pytest.raises(RatingsInputError, match="cannot read"):
        load_votes_jsonl(tmp_path / "missing.jsonl")


def test_ratings_cli(tmp_path):
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    p = tmp_path / "votes.jsonl"
    p.write_text(
        "".join(
            json.dumps({"model_a": a, "model_b": b, "winner": w}) + "\n"
            for a, b, w in [("A", "B", "model_a"), ("C", "B", "model_b"), ("A", "C", "both_good")]
        )
    )
    r = CliRunner().invoke(
        app, ["ratings", "--votes", str(p), "--method", "elo", "--k", "32", "--ties", "half", "--rounds", "0"]
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert list(out) == ["A", "B", "C"]  # best first
    assert out["A"]["rating"] == pytest.approx(1014.4966, abs=2e-3) and out["C"]["games"] == 2
    r = CliRunner().invoke(app, ["ratings", "--votes", str(p), "--method", "bt", "--seed", "3"])
    assert r.exit_code == 0 and set(json.loads(r.stdout)["A"]) == {"rating", "ci_low", "ci_high", "rank", "games"}
    bad = CliRunner().invoke(app, ["ratings", "--votes", str(p), "--method", "trueskill"])
    assert bad.exit_code == 2 and "method must be" in bad.output


@pytest.mark.parametrize(
    "kwargs, msg",
    [
        ({"method": "elo", "k": math.nan}, "k must be"),
        ({"method": "elo", "k": 0.0}, "k must be"),
        ({"method": "elo", "k": -2.0}, "k must be"),
        ({"method": "elo", "k": math.inf}, "k must be"),
        ({"method": "elo", "scale": 0.0}, "scale must be"),
        ({"method": "bt", "scale": math.nan}, "scale must be"),
        ({"method": "bt", "base": -1.0}, "base must be"),
        ({"method": "bt", "base": 1.0}, "base must be"),
        ({"method": "elo", "base": 0.5}, "base must be"),
        ({"method": "bt", "base": math.inf}, "base must be"),
        ({"method": "bt", "start": math.nan}, "start must be"),
        ({"method": "elo", "start": -math.inf}, "start must be"),
        ({"method": "bt", "bootstrap_rounds": -1}, "rounds must be"),
    ],
)
def test_compute_ratings_refuses_degenerate_parameters(kwargs, msg):
    # k, scale > 0, base > 1 and all finite: otherwise E_a = 1/(1 + base**(d/scale)) is NaN or constant
    # (base 1: every expected score 0.5 whatever the ratings; ln(base) <= 0 in the BT mapping)
    votes = [V("a", "b", "model_a"), V("a", "b", "model_b")]
    method = kwargs.pop("method")
    with pytest.raises(RatingsInputError, match=msg):
        compute_ratings(votes, method, **kwargs)


def test_ratings_cli_bad_parameters_are_one_line_errors(tmp_path):
    from typer.testing import CliRunner

    from pointlab.bridge.cli import app

    p = tmp_path / "votes.jsonl"
    p.write_text(
        json.dumps({"model_a": "a", "model_b": "b", "winner": "model_a"})
        + "\n"
        + json.dumps({"model_a": "a", "model_b": "b", "winner": "model_b"})
        + "\n"
    )
    for extra in (
        ["--method", "elo", "--k", "nan"],
        ["--method", "elo", "--scale", "0"],
        ["--method", "bt", "--base", "-1"],
        ["--method", "bt", "--base", "1"],
        ["--method", "bt", "--start", "inf"],
        ["--method", "bt", "--rounds", "-1"],
    ):
        r = CliRunner().invoke(app, ["ratings", "--votes", str(p), "--rounds", "5", *extra])
        assert r.exit_code == 2, (extra, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), (extra, r.exception)
        # NaN and infinities are refused by the CLI's guard (clikit.guard_options), the rest by ratings
        assert r.stdout == "" and ("must be" in r.output or "is not a finite number" in r.output), (extra, r.output)
        assert r.output.count("\n") == 1, r.output
