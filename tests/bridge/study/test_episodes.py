"""Pairwise studies: the participant's steps over episodes, the one-winner comparison in the store,
the migration of a version-7 file, and the results (ratings, win matrix, progress) against values
worked out by hand."""

from __future__ import annotations

import math
import sqlite3
import threading

import pytest

from pointlab.bridge.study.episodes import category_of, next_pairwise_step, pick_pair
from pointlab.bridge.study.pairwise_results import pairwise_results, progress_summary, win_matrix
from pointlab.bridge.study.store import Store, StoreError
from pointlab.bridge.trials.outcomes import Abort, Refusal
from tests.bridge.study.test_store import _full_trial


# -- steps ---------------------------------------------------------------------------------------
def _ep(i, a=None, b=None, pref=None, **kw):
    return {
        "id": i, "trial_a_id": a, "trial_b_id": b, "preference": pref, "agent_a": "x", "agent_b": "y",
        "finished_unix_s": 1.0, **kw,
    }  # fmt: skip


def _t(i, outcome=None, code=None):
    return {"id": i, "outcome": outcome, "abort": {"code": code} if code else None}


def _step(episodes, trials, n=3, max_repeats=2):
    return next_pairwise_step(
        episodes=episodes, trials={t["id"]: t for t in trials}, episodes_per_participant=n, max_repeats=max_repeats
    )


def test_a_participant_types_then_compares_then_is_done():
    s = _step([], [])
    assert (s.kind, s.trial_number, s.repeat) == ("trial", 1, False)
    # both halves stored (a completed motion and a refusal, failed at once): the comparison is due
    s = _step([_ep(7, 1, 2)], [_t(1), _t(2, "failed")])
    assert (s.kind, s.episode_id, s.trial_number) == ("compare", 7, 1)
    s = _step([_ep(7, 1, 2, "A")], [_t(1, "failed"), _t(2, "failed")])
    assert (s.kind, s.trial_number) == ("trial", 2)
    eps = [_ep(k, 2 * k, 2 * k + 1, "tie") for k in range(3)]
    trials = [_t(i, "succeeded") for i in range(6)]
    assert _step(eps, trials).kind == "done"


def test_an_aborted_half_voids_the_episode_and_its_slot_comes_again_within_the_repeat_cap():
    # A aborted by the e-stop: B never ran; the same slot is offered again
    s = _step([_ep(1, 10)], [_t(10, "aborted", "estop")])
    assert (s.kind, s.trial_number, s.repeat) == ("trial", 1, True)
    # a half missing without an abort (the session ended between the halves) voids it too
    s = _step([_ep(1, 10)], [_t(10, "failed")])
    assert (s.kind, s.trial_number, s.repeat) == ("trial", 1, True)
    # ... but not while its run has not ended: B is running, nothing is void, no repeat is used, even
    # with no repeats at all (the study must not look finished in the middle of its last episode)
    s = _step([_ep(1, 10, finished_unix_s=None)], [_t(10, "failed")], n=1, max_repeats=0)
    assert (s.kind, s.trial_number, s.repeat) == ("trial", 1, False)
    # three capped voids with max_repeats 2: the third uses up its slot (0 kept + (3 - 2) = 1 slot used)
    voids = [_ep(k, 10 + k) for k in range(3)]
    s = _step(voids, [_t(10 + k, "aborted", "robot_fault") for k in range(3)])
    assert (s.kind, s.trial_number, s.repeat) == ("trial", 2, False)
    # a lost station never uses a repeat: five of them and the first slot is still offered
    voids = [_ep(k, 10 + k) for k in range(5)]
    s = _step(voids, [_t(10 + k, "aborted", "station_lost") for k in range(5)])
    assert (s.kind, s.trial_number, s.repeat) == ("trial", 1, True)


def test_instruction_buckets():
    assert category_of("pick up the cube next to the bowl") == "relation"
    assert category_of("Pick up the SECOND cube from the left") == "count"
    assert category_of("grab the red block") == "attribute"
    assert category_of("pick up the banana") == "object"
    # the first rule wins: a relation with a colour in it is a relation
    assert category_of("the green cube left of the can") == "relation"


def test_uniform_pairs_cover_the_least_compared_pair_first():
    import numpy as np

    study = {"agents": ["p", "q", "r"], "pair_sampling": "uniform"}
    eps = [
        {"agent_a": "p", "agent_b": "q", "preference": "A", "category": "object"},
        {"agent_a": "r", "agent_b": "p", "preference": "B", "category": "object"},
    ]
    for seed in range(20):  # only (q, r) has no episode; its A/B order is random
        assert sorted(pick_pair(study, eps, np.random.default_rng(seed))) == ["q", "r"]
    orders = {pick_pair(study, eps, np.random.default_rng(seed)) for seed in range(40)}
    assert orders == {("q", "r"), ("r", "q")}


# -- store -----------------------------------------------------------------------------------------
@pytest.fixture
def pair_store(tmp_path):
    store = Store(tmp_path / "pairs.sqlite")
    sid = store.create_study(agents=["sim-oracle", "sim-noisy"], trials_per_agent=2, mode="pairwise")
    pid = store.add_participant(sid, token="t" * 22, agent_order=["sim-oracle", "sim-noisy"], label="P1")
    yield store, sid, pid
    store.close()


def _bare_episode(store, sid, pid, **kw) -> int:
    """A new episode of sim-oracle (A) against sim-noisy (B) without halves; ``kw`` overrides fields."""
    fields = {"instruction": "pick", "category": "object", "agent_a": "sim-oracle", "agent_b": "sim-noisy", **kw}
    return store.create_episode(study_id=sid, participant_id=pid, **fields)


def _episode_with_halves(store, sid, pid, b_result=None):
    eid = _bare_episode(store, sid, pid, instruction="pick up the red cube", category="attribute")
    n = store.episode(eid)["number"]
    ta = store.save_trial(_full_trial(f"a{n:031d}"), study_id=sid, participant_id=pid, block=n - 1)
    store.set_episode_half(eid, "a", ta)
    b = b_result or _full_trial(f"b{n:031d}").model_copy(update={"agent": "sim-noisy"})
    tb = store.save_trial(b, study_id=sid, participant_id=pid, block=n - 1)
    store.set_episode_half(eid, "b", tb)
    store.finish_episode(eid)
    return eid, ta, tb


def test_fifty_concurrent_comparisons_of_one_episode_keep_exactly_one(pair_store):
    store, sid, pid = pair_store
    eid, ta, tb = _episode_with_halves(store, sid, pid)
    wins, refusals = [], []
    start = threading.Barrier(50)

    def compare(k):
        start.wait()
        try:
            store.judge_episode(eid, preference="A" if k % 2 else "B", progress_a=100, progress_b=k)
            wins.append(k)
        except StoreError as e:
            refusals.append(str(e))

    threads = [threading.Thread(target=compare, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(refusals) == 49
    assert all("compared already" in r for r in refusals)
    row = store.episode(eid)
    assert row["progress_b"] == wins[0] and row["preference"] == ("A" if wins[0] % 2 else "B")


def test_a_comparison_judges_each_half_by_its_progress(pair_store):
    store, sid, pid = pair_store
    refused = _full_trial("r" * 32).model_copy(
        update={
            "agent": "sim-noisy",
            "robot_outcome": "refused",
            "refusal": Refusal(code="workspace"),
            "outcome": "failed",
        }
    )
    eid, ta, tb = _episode_with_halves(store, sid, pid, refused)
    store.judge_episode(eid, preference="A", progress_a=100, progress_b=0, reason="B did not move")
    a, b = store.trial(ta), store.trial(tb)
    assert (a["judgement"], a["outcome"]) == ("succeeded", "succeeded")  # 100: the top anchor
    assert (b["judgement"], b["outcome"]) == (None, "failed")  # a refusal keeps its outcome, unasked
    # 75 ("it did what was asked, but clumsily") carried the instruction out; 74 did not
    eid2, ta2, tb2 = _episode_with_halves(store, sid, pid)
    store.judge_episode(eid2, preference="A", progress_a=75, progress_b=74)
    assert (store.trial(ta2)["judgement"], store.trial(tb2)["judgement"]) == ("succeeded", "failed")


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"preference": "C"}, "preference must be one of"),
        ({"progress_a": 101}, "progress_a must be a whole number"),
        ({"progress_b": -1}, "progress_b must be a whole number"),
        ({"progress_a": True}, "progress_a must be a whole number"),
        ({"progress_a": 50.0}, "progress_a must be a whole number"),
        ({"reason": "x" * 1001}, "at most 1000 characters"),
    ],
)
def test_bad_comparisons_are_refused_and_store_nothing(pair_store, kw, match):
    store, sid, pid = pair_store
    eid, ta, _ = _episode_with_halves(store, sid, pid)
    with pytest.raises(StoreError, match=match):
        store.judge_episode(eid, **{"preference": "A", "progress_a": 50, "progress_b": 50, **kw})
    assert store.episode(eid)["preference"] is None and store.trial(ta)["judgement"] is None


def test_an_episode_with_an_aborted_or_missing_half_is_not_compared(pair_store):
    store, sid, pid = pair_store
    eid = _bare_episode(store, sid, pid)
    with pytest.raises(StoreError, match="does not have both halves"):
        store.judge_episode(eid, preference="A", progress_a=0, progress_b=0)
    aborted = _full_trial("x" * 32).model_copy(
        update={"outcome": "aborted", "abort": Abort(code="estop", detail="e-stop")}
    )
    eid2, ta, tb = _episode_with_halves(store, sid, pid, aborted)
    with pytest.raises(StoreError, match="aborted half"):
        store.judge_episode(eid2, preference="A", progress_a=100, progress_b=0)
    assert store.episode(eid2)["preference"] is None and store.trial(ta)["judgement"] is None  # rolled back
    with pytest.raises(StoreError, match="already stored"):
        store.set_episode_half(eid2, "a", tb)
    with pytest.raises(StoreError, match="twice"):
        _bare_episode(store, sid, pid, agent_b="sim-oracle")


def test_study_modes_are_validated(tmp_path):
    store = Store(tmp_path / "m.sqlite")
    with pytest.raises(StoreError, match="at least two agents"):
        store.create_study(agents=["a"], trials_per_agent=1, mode="pairwise")
    with pytest.raises(StoreError, match="mode must be one of"):
        store.create_study(agents=["a", "b"], trials_per_agent=1, mode="ab")
    with pytest.raises(StoreError, match="pair_sampling must be one of"):
        store.create_study(agents=["a", "b"], trials_per_agent=1, mode="pairwise", pair_sampling="ucb")
    sid = store.create_study(agents=["a"], trials_per_agent=1)
    assert (store.study(sid)["mode"], store.study(sid)["pair_sampling"]) == ("absolute", "uniform")
    store.close()


def test_a_version_7_file_is_migrated_and_its_studies_stay_absolute(tmp_path):
    path = tmp_path / "v7.sqlite"
    store = Store(path)
    sid = store.create_study(agents=["a", "b"], trials_per_agent=3, name="old")
    store.close()
    con = sqlite3.connect(path)
    con.executescript(
        "DROP TABLE episodes; ALTER TABLE studies DROP COLUMN mode; ALTER TABLE studies DROP COLUMN pair_sampling;"
        "UPDATE meta SET value = '7' WHERE key = 'schema_version';"
    )
    con.commit()
    con.close()
    store = Store(path)
    study = store.study(sid)
    assert (study["name"], study["mode"], study["pair_sampling"]) == ("old", "absolute", "uniform")
    assert store.episodes() == []
    store.close()


# -- results ---------------------------------------------------------------------------------------
def _row(a, b, pref, pa, pb, cat="object", i=0):
    return {
        "id": i, "participant_id": 1, "number": i + 1, "instruction": "pick", "category": cat, "agent_a": a,
        "agent_b": b, "trial_a_id": 2 * i + 1, "trial_b_id": 2 * i + 2, "preference": pref, "progress_a": pa,
        "progress_b": pb, "reason": "", "created_unix_s": 0.0, "judged_unix_s": 1.0, "finished_unix_s": 1.0,
    }  # fmt: skip


def test_ratings_win_matrix_and_progress_by_hand():
    # p beats q three times and loses once, no ties: the Bradley-Terry MLE has pi_p / pi_q = 3, so the
    # ratings are 1000 -/+ 200 log10(3) = 1095.42 and 904.58 (400 log10 3 = 190.85 apart)
    eps = [
        _row("p", "q", "A", 100, 0, i=0),
        _row("q", "p", "B", 50, 100, i=1),
        _row("p", "q", "A", 75, 25, i=2),
        _row("q", "p", "A", 100, 50, i=3),
    ]
    trials = [{"id": k, "outcome": "failed"} for k in range(1, 9)]
    res = pairwise_results({"agents": ["p", "q"]}, eps, trials, bootstrap_rounds=50)
    r = res["ratings"]["ratings"]
    assert r["p"]["rating"] == pytest.approx(1000 + 200 * math.log10(3), abs=0.05)
    assert r["q"]["rating"] == pytest.approx(1000 - 200 * math.log10(3), abs=0.05)
    assert r["p"]["episodes"] == r["q"]["episodes"] == 4
    assert res["win_matrix"]["p"]["q"] == {"wins": 3, "losses": 1, "ties": 0}
    assert res["win_matrix"]["q"]["p"] == {"wins": 1, "losses": 3, "ties": 0}
    # p's progress: 100, 100, 75, 50 -> mean 81.25
    assert res["progress"]["p"]["mean"] == pytest.approx(81.25)
    assert res["episodes"] == {"compared": 4, "void": 0, "waiting": 0, "running": 0}
    assert [e["winner"] for e in res["log"]] == ["p", "p", "p", "q"]
    assert res["bucketed"]["buckets"] == {"object": {"tau": 0.0, "episodes": 4}}


def test_progress_interval_is_students_t():
    # 70, 80, 90, 100: mean 85, s = 12.9099; t(0.975, 3) = 3.182446 -> half width 20.5424; clipped at 100
    s = progress_summary([70, 80, 90, 100])
    assert s["mean"] == 85.0 and s["ci95"][0] == pytest.approx(64.4576, abs=1e-3) and s["ci95"][1] == 100.0
    assert progress_summary([40])["ci95"] is None and progress_summary([])["mean"] is None


def test_ties_count_for_both_and_void_episodes_are_not_rated():
    eps = [_row("p", "q", "tie", 50, 50, i=0), _row("p", "q", None, None, None, i=1)]
    m = win_matrix(["p", "q", "r"], eps)
    assert m["p"]["q"] == {"wins": 0, "losses": 0, "ties": 1} and m["q"]["p"]["ties"] == 1
    assert m["r"]["p"] == {"wins": 0, "losses": 0, "ties": 0}
    # episode 1's B half was aborted: void, not waiting
    trials = [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4, "outcome": "aborted", "abort": {"code": "estop"}}]
    res = pairwise_results({"agents": ["p", "q"]}, eps, trials, bootstrap_rounds=10)
    assert res["episodes"] == {"compared": 1, "void": 1, "waiting": 0, "running": 0}
    assert [e["void"] for e in res["log"]] == [False, True]


def test_an_undefeated_agent_is_marked_unbounded_and_a_participant_out_of_repeats_short():
    eps = [_row("p", "q", "A", 100, 0, i=0), _row("q", "p", "B", 0, 100, i=1)]
    for e in eps:
        e["participant_id"] = 1
    # participant 2: one episode asked, both tries void (B aborted by a fault), max_repeats 1
    voids = [dict(_row("p", "q", None, None, None, i=k), participant_id=2) for k in (2, 3)]
    trials = [{"id": k, "outcome": "failed"} for k in range(1, 9)]
    trials[5] = {"id": 6, "outcome": "aborted", "abort": {"code": "robot_fault"}}  # episode 2's B half
    trials[7] = {"id": 8, "outcome": "aborted", "abort": {"code": "robot_fault"}}  # episode 3's B half
    res = pairwise_results(
        {"agents": ["p", "q"], "trials_per_agent": 1, "max_repeats": 1},
        eps + voids,
        trials,
        [{"id": 1, "label": "P1"}, {"id": 2, "label": "P2"}],
        bootstrap_rounds=10,
    )
    r = res["ratings"]["ratings"]
    assert (r["p"]["bound"], r["q"]["bound"]) == ("no losses", "no wins")
    assert (r["p"]["wins"], r["p"]["losses"], r["p"]["ties"]) == (2, 0, 0) and r["p"]["few_episodes"]
    # P1 asked 1 episode and compared 2 (not short); P2: 2 voids, 1 repeat: the second uses its slot
    assert res["short_participants"] == ["P2"]


def test_a_start_closes_the_episodes_a_dead_session_left_running(pair_store):
    store, sid, pid = pair_store
    from pointlab.bridge.study.steps import step_of

    eid = _bare_episode(store, sid, pid)
    ta = store.save_trial(_full_trial("k" * 32), study_id=sid, participant_id=pid, block=0)
    store.set_episode_half(eid, "a", ta)  # the session died while B ran: its restart stores B interrupted
    interrupted = _full_trial("m" * 32).model_copy(
        update={"agent": "sim-noisy", "outcome": "aborted", "abort": Abort(code="interrupted", detail="x")}
    )
    tb = store.save_trial(interrupted, study_id=sid, participant_id=pid, block=0)
    participant = store.participant(pid)
    assert (step_of(store, participant).kind, step_of(store, participant).repeat) == ("trial", False)  # running
    assert store.close_unfinished_episodes() == 1 and store.close_unfinished_episodes() == 0
    assert store.episode(eid)["trial_b_id"] == tb  # the interrupted half is linked to its episode
    step = step_of(store, participant)
    assert (step.kind, step.trial_number, step.repeat) == ("trial", 1, True)  # void now: offered again
    first = store.episode(eid)["finished_unix_s"]
    store.finish_episode(eid)  # kept at the first call
    assert store.episode(eid)["finished_unix_s"] == first


def test_the_results_pages_cache_sees_an_episode_end_with_nothing_else_changed():
    # an episode aborted before its first half: only finished_unix_s changes, and the cached results
    # of the running episode must not be served for the void one
    from pointlab.ui.routes_results import _pairwise

    study = {"id": 987654, "agents": ["p", "q"], "trials_per_agent": 1, "max_repeats": 2}
    running = dict(_row("p", "q", None, None, None, i=0), trial_a_id=None, trial_b_id=None, finished_unix_s=None)
    db = object()
    assert _pairwise(study, db, [running], [], [])["episodes"]["running"] == 1
    ended = dict(running, finished_unix_s=5.0)
    assert _pairwise(study, db, [ended], [], [])["episodes"] == {"compared": 0, "void": 1, "waiting": 0, "running": 0}
