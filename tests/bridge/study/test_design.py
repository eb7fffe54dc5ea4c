"""Study design: Williams orders, the participant's step sequence, the arm queue, invitations."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from pointlab.bridge.study.store import Store, StoreError
from pointlab.bridge.study.design import (
    ArmQueue,
    Step,
    agent_order,
    alias,
    invite_participant,
    next_step,
    williams_design,
)


def test_three_agents_use_all_six_orders():
    # n odd: the square and its mirror; for n = 3 that is every permutation exactly once.
    rows = williams_design(3)
    assert sorted(map(tuple, rows)) == sorted(itertools.permutations(range(3)))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_williams_balance(n):
    rows = williams_design(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    reps = len(rows) // n
    for row in rows:
        assert sorted(row) == list(range(n))
    for pos in range(n):  # every condition equally often in every position
        assert Counter(r[pos] for r in rows) == {c: reps for c in range(n)}
    # every ordered pair of different conditions is adjacent equally often (carry-over balance)
    pairs = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    assert pairs == {(a, b): reps for a in range(n) for b in range(n) if a != b}


def test_williams_four_first_row_is_the_textbook_one():
    # Williams (1949) construction for n = 4: 0, 1, 3, 2 then add 1 mod 4 per row.
    assert williams_design(4) == [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]


def test_williams_edge_cases():
    assert williams_design(1) == [[0]]
    with pytest.raises(ValueError):
        williams_design(0)


def test_agent_order_cycles_rows():
    agents = ["sim-oracle", "sim-noisy", "human"]
    orders = [agent_order(agents, i) for i in range(12)]
    assert orders[:6] == orders[6:]
    assert len({tuple(o) for o in orders[:6]}) == 6
    assert alias(0) == "Agent 1" and alias(2) == "Agent 3"


def _t(id_, block, judgement):
    return {"id": id_, "block": block, "judgement": judgement}


def test_next_step_sequence_two_blocks_two_trials():
    kw = {"n_blocks": 2, "trials_per_agent": 2}
    s = next_step(trials=[], surveyed_blocks=[], **kw)
    assert (s.kind, s.block, s.alias, s.trial_number) == ("trial", 0, "Agent 1", 1)
    s = next_step(trials=[_t(1, 0, None)], surveyed_blocks=[], **kw)
    assert (s.kind, s.trial_id, s.trial_number) == ("judge", 1, 1)
    s = next_step(trials=[_t(1, 0, "failed")], surveyed_blocks=[], **kw)
    assert (s.kind, s.trial_number) == ("trial", 2)
    done0 = [_t(1, 0, "failed"), _t(2, 0, "succeeded")]
    assert next_step(trials=done0, surveyed_blocks=[], **kw) == Step("sus", 0, "Agent 1", None, None, 2, 2)
    s = next_step(trials=done0, surveyed_blocks=[0], **kw)
    assert (s.kind, s.block, s.alias, s.trial_number) == ("trial", 1, "Agent 2", 1)
    all_done = done0 + [_t(3, 1, "succeeded"), _t(4, 1, "succeeded")]
    assert next_step(trials=all_done, surveyed_blocks=[0], **kw).kind == "sus"
    assert next_step(trials=all_done, surveyed_blocks=[0, 1], **kw).kind == "done"


def test_arm_queue():
    q = ArmQueue()
    assert q.holder() is None and q.position(1) is None
    assert q.join(7) == 0 and q.join(3) == 1 and q.join(9) == 2
    assert q.join(3) == 1  # a second tab keeps the place
    q.leave(3)
    assert q.position(3) == 1  # one tab is still open
    q.leave(7)
    assert q.holder() == 3 and q.position(9) == 1
    q.leave(3)
    assert q.snapshot() == [9]
    q.join(3)
    q.join(3)
    q.leave(3, all_connections=True)
    assert q.snapshot() == [9]
    q.leave(12345)  # unknown: ignored
    q.join(4)
    assert q.move_to_back(9) and q.snapshot() == [4, 9] and not q.move_to_back(12345)


def test_invitations_follow_the_design(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    agents = ["sim-oracle", "sim-noisy", "human"]
    sid = store.create_study(agents=agents, trials_per_agent=3)
    got = []
    for _ in range(6):
        pid, token = invite_participant(store, sid)
        assert len(token) >= 20 and store.participant_by_token(token)["id"] == pid
        got.append(tuple(store.participant(pid)["agent_order"]))
    assert sorted(got) == sorted(itertools.permutations(agents))
    # each agent leads exactly twice over six participants
    assert Counter(o[0] for o in got) == {a: 2 for a in agents}
    with pytest.raises(StoreError):
        invite_participant(store, 99)
    store.close()
