"""Sim-to-real agreement and prediction-powered inference (bridge/study/simreal.py)."""

from __future__ import annotations

import numpy as np
import pytest

from pointlab.bridge.study.simreal import SimRealError, compare_studies, mmrv, pearson_r, ppi_mean

# one small data set: 12 paired real outcomes with the simulator's rate on the same condition, 30
# unlabeled simulated outcomes (21 successes)
Y = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0]
YHAT = [0.8, 0.2, 0.6, 1.0, 0.4, 0.8, 0.6, 1.0, 0.0, 0.8, 0.6, 0.4]
YU = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1]


def test_ppi_agrees_with_ppi_python_and_with_the_formulas_by_hand():
    # By hand: lam = 1 is mean(YU) + mean(Y - YHAT) = 21/30 + (8 - 7.2)/12 = 0.7 + 0.0667;
    # lam = 0 is the real outcomes alone, 8/12.
    plain = ppi_mean(Y, YHAT, YU, lam=1.0)
    assert plain.estimate == pytest.approx(0.7 + 0.8 / 12, abs=1e-12)
    assert ppi_mean(Y, YHAT, YU, lam=0.0).estimate == pytest.approx(8 / 12, abs=1e-12)
    # ppi_py 0.2.3 (pip install ppi-python), ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05, lam=...)
    # and ppi_mean_pointestimate on these arrays printed:
    #   lam=None: 0.7126779530588687 [0.4928229415546713, 0.9325329645630661]
    #   lam=1:    0.7666666666666666 [0.5406640678099941, 0.9926692655233391]
    #   lam=0:    0.6666666666666666 [0.3999493513135939, 0.9333839820197394]
    for lam, (est, lo, hi) in {
        None: (0.7126779530588687, 0.4928229415546713, 0.9325329645630661),
        1.0: (0.7666666666666666, 0.5406640678099941, 0.9926692655233391),
        0.0: (0.6666666666666666, 0.3999493513135939, 0.9333839820197394),
    }.items():
        got = ppi_mean(Y, YHAT, YU, lam=lam, alpha=0.05)
        assert (got.estimate, got.low, got.high) == pytest.approx((est, lo, hi), abs=1e-12)
    tuned = ppi_mean(Y, YHAT, YU)
    assert 0 < tuned.lam < 1 and (tuned.classical_low, tuned.classical_high) == pytest.approx(
        (0.3999493513135939, 0.9333839820197394), abs=1e-12
    )


def test_the_95_percent_interval_covers_the_truth_93_to_97_percent_of_1000_draws():
    """A known world: 20 instructions, each with a real success probability and a simulator that
    tracks it with a bias (sim = real - 0.15, clipped, plus noise). One study: 60 real trials on random
    instructions, each paired with the simulator's rate from 4 simulated trials on that instruction;
    400 more simulated trials on random instructions. Truth: the mean real probability. Each draw is
    independent (seeded)."""
    rng = np.random.default_rng(20261204)
    k = 20
    p_real = rng.uniform(0.2, 0.95, k)
    p_sim = np.clip(p_real - 0.15 + rng.normal(0, 0.08, k), 0.02, 0.98)
    truth = p_real.mean()
    covered, narrower = 0, 0
    for _ in range(1000):
        x = rng.integers(0, k, 60)
        y = rng.random(60) < p_real[x]
        yhat = rng.binomial(4, p_sim[x]) / 4
        xu = rng.integers(0, k, 400)
        yu = rng.random(400) < p_sim[xu]
        e = ppi_mean(y.astype(float), yhat, yu.astype(float))
        covered += e.low <= truth <= e.high
        narrower += (e.high - e.low) < (e.classical_high - e.classical_low)
    assert 930 <= covered <= 970, covered
    assert narrower >= 900  # the simulator tracks the real outcomes: PPI is the narrower interval


def test_mmrv_and_pearson_on_simplerenv_s_published_widowx_rates():
    """SimplerEnv's metrics.py, task widowx_carrot_on_plate (rt-1-x, octo-base, octo-small): real
    0.000, 0.250, 0.083; sim 0.042, 0.083, 0.097. By hand: rt-1-x is ordered right against both;
    octo-base and octo-small are swapped (sim .083 < .097, real .250 > .083): each gets the real gap
    0.167; MMRV = (0 + 0.167 + 0.167) / 3 = 0.1113."""
    sim, real = [0.042, 0.083, 0.097], [0.000, 0.250, 0.083]
    assert mmrv(sim, real) == pytest.approx(2 * 0.167 / 3, abs=1e-9)
    assert mmrv(real, real) == 0.0
    # a tie on one side and an order on the other is a violation (the released code's strict >): for
    # the second agent (sim .5 > .5 false, real .6 > .2 true) the gap 0.4; the first sees no violation
    # (.5 > .5 false, .2 > .6 false): (0 + 0.4) / 2
    assert mmrv([0.5, 0.5], [0.2, 0.6]) == pytest.approx(0.2)
    from scipy.stats import pearsonr

    assert pearson_r(sim, real) == pytest.approx(pearsonr(sim, real)[0], abs=1e-12)
    assert pearson_r([0.5, 0.5], [0.1, 0.9]) is None  # constant: undefined
    with pytest.raises(SimRealError):
        mmrv([0.1], [0.1, 0.2])
    with pytest.raises(SimRealError):
        ppi_mean([1.0], [1.0], [1.0, 0.0])
    with pytest.raises(SimRealError):
        ppi_mean([1.0, float("nan")], [1.0, 0.0], [1.0, 0.0])


def test_compare_pairs_real_trials_with_the_sim_rate_of_the_same_instruction():
    def row(agent, instruction, outcome):
        return {"agent": agent, "instruction": instruction, "outcome": outcome}

    sim = [row("a", "pick up the red cube", o) for o in ("succeeded", "succeeded", "failed", "succeeded")]
    sim += [row("a", "Pick up  the blue bowl", "failed"), row("a", "pick up the blue bowl", "succeeded")]
    sim += [row("a", f"pick up thing {i}", "succeeded" if i % 3 else "failed") for i in range(6)]
    sim += [row("b", "pick up the red cube", "failed")] * 3 + [row("b", "x", "aborted")]
    real = [row("a", "pick up the red cube", "succeeded"), row("a", "pick up the red cube", "failed")]
    real += [row("a", "PICK UP THE BLUE BOWL", "succeeded"), row("a", "never simulated", "failed")]
    real += [row("b", "pick up the red cube", "failed"), row("c", "only real", "succeeded")]
    got = compare_studies(sim, real)
    a, b = got["agents"]
    # a: sim 4 of 6 + (1, 2, 4, 5 of thing 0..5 succeed: i % 3 != 0 -> 4 of 6) = 3 + 1 + 4 = 8 of 12
    assert (a["agent"], a["sim_n"], a["sim_rate"], a["real_n"], a["real_rate"]) == ("a", 12, 8 / 12, 4, 0.5)
    # pairs: red cube x2 (sim rate 3/4), blue bowl (1/2, the instruction matched case and spaces
    # aside); "never simulated" is unpaired; unlabeled: the 6 "thing" trials (4 successes)
    assert (a["paired"], a["unlabeled"]) == (3, 6)
    assert a["ppi"]["estimate"] == pytest.approx(
        ppi_mean([1, 0, 1], [0.75, 0.75, 0.5], [0, 1, 1, 0, 1, 1]).estimate, abs=1e-12
    )
    assert b["ppi"] is None and "at least 2" in b["ppi_note"]  # one pair, no unlabeled
    assert got["n_agents"] == 2 and got["mmrv"] == 0.0  # a above b in both
    assert "two agents" in got["note"]  # r is +-1 with two points: said so
    assert got["pearson_r"] == pytest.approx(1.0)


def test_the_compare_command_reads_two_studies_from_a_store(tmp_path):
    """Two studies in one SQLite store; the simulated one ran each instruction twice. By hand, agent
    a: sim 3 of 4, real 1 of 2; agent b: sim 1 of 4, real 0 of 2: the same order (MMRV 0)."""
    import json

    from typer.testing import CliRunner

    from pointlab.bridge.cli import build_app
    from pointlab.bridge.study.store import Store
    from pointlab.bridge.trials.record import TrialResult

    db = tmp_path / "act.sqlite"
    store = Store(db)
    outcomes = {
        "sim": {
            "a": ["succeeded", "succeeded", "succeeded", "failed"],
            "b": ["failed", "failed", "succeeded", "failed"],
        },
        "real": {"a": ["succeeded", "failed"], "b": ["failed", "failed"]},
    }
    ids = {}
    for kind, per_agent in outcomes.items():
        sid = ids[kind] = store.create_study(agents=["a", "b"], trials_per_agent=4, name=kind)
        for agent, judged in per_agent.items():
            for i, j in enumerate(judged):
                instruction = ["pick up the red cube", "pick up the blue bowl"][i % 2]
                tid = store.save_trial(
                    TrialResult(
                        trial_id=f"{kind}-{agent}-{i}",
                        agent=agent,
                        instruction=instruction,
                        action="pick",
                        robot_outcome="done",
                    ),
                    study_id=sid,
                )
                store.set_judgement(tid, j)
    store.close()
    run = CliRunner().invoke(
        build_app(), ["act", "compare", "--db", str(db), "--sim", str(ids["sim"]), "--real", str(ids["real"])]
    )
    assert run.exit_code == 0, run.output
    got = json.loads(run.stdout)
    rates = {a["agent"]: (a["sim_rate"], a["real_rate"], a["paired"], a["unlabeled"]) for a in got["agents"]}
    # every real instruction was simulated: all real trials are paired, no unlabeled trial is left
    assert rates == {"a": (0.75, 0.5, 2, 0), "b": (0.25, 0.0, 2, 0)}
    assert got["mmrv"] == 0.0 and got["pearson_r"] == pytest.approx(1.0)
    assert all(a["ppi"] is None for a in got["agents"])  # PPI needs simulated trials beyond the pairs
    bad = CliRunner().invoke(build_app(), ["act", "compare", "--db", str(db), "--sim", "99", "--real", "1"])
    assert bad.exit_code == 2 and "--sim" in bad.output and "Traceback" not in bad.output
    none = CliRunner().invoke(build_app(), ["act", "compare", "--sim", "1", "--real", "2"])
    assert none.exit_code == 2
    same = CliRunner().invoke(build_app(), ["act", "compare", "--db", str(db), "--sim", "1", "--real", "1"])
    assert same.exit_code == 2 and "same study" in same.output
