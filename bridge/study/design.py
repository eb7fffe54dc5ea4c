"""Point-Act study design: blinded agent aliases, balanced agent orders, the per-participant
sequence of blocks (trials, judgements, SUS), and the queue for the one arm.

PointArena sec. 4.1: each participant evaluates every agent (there: Molmo-7B-D, GPT-4o and a
human reference) over a few trials and fills in a SUS survey after each condition; agents are
blind to the participant (sec. 3.4, "double-blind"). Here an agent is shown only as
``"Agent k"``, where k is the block's position in *that participant's* order, so the same alias
names different agents for different participants and an alias reveals nothing across people.

Orders come from a **Williams design** (Williams, E. J. 1949, "Experimental designs balanced for
the estimation of residual effects of treatments", Aust. J. Sci. Res. A 2:149-168): a Latin square
in which every agent appears once in every position and every agent follows every other agent
equally often (first-order carry-over balance). For an even number of agents one n x n square does
it; for an odd number (3 agents: the default) the square and its mirror image are used, 2n rows,
which for n = 3 are all 6 orders. Participant i gets row ``i mod rows``, so balance is exact after
every complete multiple of ``rows`` participants (6 for 3 agents).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = [
    "DESIGN",
    "williams_design",
    "agent_order",
    "alias",
    "Step",
    "next_step",
    "ArmQueue",
    "new_invite_token",
    "invite_participant",
    "BlockProgress",
    "block_progress",
    "trial_settings",
]

DESIGN = "williams"


def williams_design(n: int) -> list[list[int]]:
    """Rows of a Williams (balanced Latin square) design for ``n`` conditions.

    Returns ``n`` rows when ``n`` is even, ``2n`` rows when odd (the square plus its mirror
    image); each row is a permutation of ``range(n)``.

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"need at least one condition, got {n}")
    # First row 0, 1, n-1, 2, n-2, ...; row r adds r (mod n) to every entry.
    first = [0]
    lo, hi = 1, n - 1
    for j in range(1, n):
        if j % 2 == 1:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(c + r) % n for c in first] for r in range(n)]
    if n % 2 == 1 and n > 1:
        rows += [list(reversed(row)) for row in rows]
    return rows


def agent_order(agents: Sequence[str], participant_index: int) -> list[str]:
    """The block order of participant number ``participant_index`` (0-based) over ``agents``."""
    rows = williams_design(len(agents))
    return [agents[i] for i in rows[participant_index % len(rows)]]


def alias(block: int) -> str:
    """What a participant sees for block ``block`` (0-based): ``"Agent 1"``, ``"Agent 2"``, ..."""
    return f"Agent {block + 1}"


@dataclass(frozen=True)
class Step:
    """What a participant does next.

    kind: ``setup`` (the block's starting scene must be restored before its first trial), ``trial``
    (type an instruction), ``judge`` (judge trial ``trial_id``), ``sus`` (survey of ``block``),
    ``compare`` (a pairwise study: compare the two halves of episode ``episode_id``), ``done``. ``trial_number`` is 1-based within the block (an aborted trial's slot is offered again,
    so it keeps its number); ``trials_per_agent`` and ``n_blocks`` give the progress; ``repeat`` says
    the slot is offered again after an abort.
    """

    kind: Literal["setup", "trial", "judge", "sus", "compare", "done"]
    block: int | None = None
    alias: str | None = None
    trial_number: int | None = None
    trial_id: int | None = None
    trials_per_agent: int = 0
    n_blocks: int = 0
    repeat: bool = False
    episode_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BlockProgress:
    """Where one participant's agent block stands: the one count every page shows.

    Attributes:
        kept: trials that count (not aborted): judged, or waiting for the judgement.
        judged: kept trials with an outcome (the participant's judgement, or a refusal: ``failed``).
        succeeded: judged trials that succeeded.
        aborted: aborted trials (left out of every rate).
        slots_used: slots done: the kept trials, and the aborts past the repeat cap (each uses up its slot).
        short: the block has used all its slots with fewer kept trials than ``trials_per_agent``
            (repeats ran out): flagged in the results and the export.
        pending: the id of a kept trial still waiting for the participant's judgement (a completed
            motion; a refusal is failed without a question), or ``None``.
        last_aborted: the block's latest trial was aborted.
        repeat: the next trial offers that aborted trial's slot again (within the repeat cap, or an
            abort that never uses a repeat).
    """

    kept: int = 0
    judged: int = 0
    succeeded: int = 0
    aborted: int = 0
    slots_used: int = 0
    short: bool = False
    pending: int | None = None
    last_aborted: bool = False
    repeat: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Abort codes that never use up one of a block's repeats (``block_progress``): the station's loss is
# neither the agent's doing nor the participant's (docs/stations.md, "Faults lose nothing").
UNCAPPED_ABORTS = frozenset({"station_lost"})


def block_progress(trials: Iterable[dict], *, trials_per_agent: int, max_repeats: int) -> BlockProgress:
    """The progress of one block from its stored trial rows (``id``, ``outcome``, ``judgement``, oldest
    first): an aborted trial's slot is offered again until the block has used ``max_repeats`` repeats,
    after which an abort uses up its slot (docs/trials.md, "Aborts"). An abort whose code is in
    ``UNCAPPED_ABORTS`` (its robot station went offline: the participant goes on at another station)
    never uses a repeat: a consortium's network must not shorten an agent's sample."""
    mine = list(trials)
    aborted = [t for t in mine if t.get("outcome") == "aborted"]
    capped = [t for t in aborted if ((t.get("abort") or {}).get("code")) not in UNCAPPED_ABORTS]
    kept = [t for t in mine if t.get("outcome") != "aborted"]
    judged = [t for t in kept if t.get("outcome") in ("succeeded", "failed")]
    # a refusal already has its outcome (failed: nothing moved at the agent's point): nothing to ask
    pending = next((t["id"] for t in kept if t.get("judgement") is None and t.get("outcome") is None), None)
    used = len(kept) + max(0, len(capped) - max_repeats)
    last_aborted = bool(mine) and mine[-1].get("outcome") == "aborted"
    return BlockProgress(
        kept=len(kept),
        judged=len(judged),
        succeeded=sum(t["outcome"] == "succeeded" for t in judged),
        aborted=len(aborted),
        slots_used=used,
        short=used >= trials_per_agent and len(kept) < trials_per_agent,
        pending=pending,
        last_aborted=last_aborted,
        repeat=last_aborted and (mine[-1] not in capped or len(capped) <= max_repeats),
    )


def trial_settings(study: dict):
    """The ``bridge.trials.station.TrialSettings`` a study's trials run under (its reveal range and
    free-space floor; ``study`` is a ``Store.study`` row)."""
    from pointlab.bridge.trials.station import TrialSettings
    from pointlab.bridge.trials.timing import RevealRule

    floor_mb = study.get("min_free_mb")
    return TrialSettings(
        reveal=RevealRule(float(study["reveal_low_s"]), float(study["reveal_high_s"])),
        min_free_bytes=None if floor_mb is None else int(floor_mb) * 1_000_000,
    )


def next_step(
    *,
    n_blocks: int,
    trials_per_agent: int,
    trials: Iterable[dict],
    surveyed_blocks: Iterable[int],
    started_blocks: Iterable[int] | None = None,
    max_repeats: int = 2,
) -> Step:
    """The participant's next step, derived only from what is stored (so a restart resumes).

    Args:
        n_blocks: number of agents in the study.
        trials_per_agent: judged trials each block needs.
        trials: the participant's stored trials, dicts with ``id``, ``block``, ``judgement``, ``outcome``.
        surveyed_blocks: blocks whose SUS survey is stored.
        started_blocks: blocks whose starting scene was restored (``None``: do not ask for a setup).
        max_repeats: how many times an aborted trial's slot is offered again, per block.

    Blocks run in order; a block starts with its setup; within a block an unjudged trial must be
    judged before the next trial; an aborted trial is not judged and its slot is offered again until
    the block has used ``max_repeats`` repeats, after which an abort uses up the slot; the SUS of a
    block follows its last slot.
    """
    trials = list(trials)
    surveyed = set(surveyed_blocks)
    started = None if started_blocks is None else set(started_blocks)
    common: dict[str, Any] = {"trials_per_agent": trials_per_agent, "n_blocks": n_blocks}
    for b in range(n_blocks):
        p = block_progress(
            [t for t in trials if t.get("block") == b], trials_per_agent=trials_per_agent, max_repeats=max_repeats
        )
        if p.pending is not None:
            return Step("judge", b, alias(b), p.kept, p.pending, **common)
        if p.slots_used < trials_per_agent:
            if started is not None and b not in started:
                return Step("setup", b, alias(b), p.slots_used + 1, None, **common)
            return Step("trial", b, alias(b), p.slots_used + 1, None, repeat=p.repeat, **common)
        if b not in surveyed:
            return Step("sus", b, alias(b), None, None, **common)
    return Step("done", **common)


class ArmQueue:
    """First come, first served control of the one arm. Position 0 commands the arm.

    A participant may hold several connections (two tabs); it stays queued until the last one
    leaves. Not thread-safe: use it from the event loop only.
    """

    def __init__(self) -> None:
        self._order: list[int] = []
        self._refs: dict[int, int] = {}

    def join(self, participant_id: int) -> int:
        """Add a connection of ``participant_id``; returns its position."""
        if participant_id not in self._refs:
            self._order.append(participant_id)
            self._refs[participant_id] = 0
        self._refs[participant_id] += 1
        return self._order.index(participant_id)

    def leave(self, participant_id: int, *, all_connections: bool = False) -> None:
        """Drop one connection (or all, e.g. when the participant is done). Unknown ids are ignored."""
        if participant_id not in self._refs:
            return
        self._refs[participant_id] -= 1
        if all_connections or self._refs[participant_id] <= 0:
            del self._refs[participant_id]
            self._order.remove(participant_id)

    def move_to_back(self, participant_id: int) -> bool:
        """Send a queued participant to the back (the operator's remedy for an idle commander);
        False when not queued."""
        if participant_id not in self._refs:
            return False
        self._order.remove(participant_id)
        self._order.append(participant_id)
        return True

    def position(self, participant_id: int) -> int | None:
        """0 when in control, k when k participants are ahead, ``None`` when not queued."""
        return self._order.index(participant_id) if participant_id in self._refs else None

    def holder(self) -> int | None:
        return self._order[0] if self._order else None

    def snapshot(self) -> list[int]:
        return list(self._order)


def new_invite_token() -> str:
    """An unguessable invite token (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def invite_participant(store: Any, study_id: int, *, label: str = "") -> tuple[int, str]:
    """Add the next participant of ``study_id`` with its Williams-design order; returns ``(id, token)``.

    Raises:
        pointlab.bridge.study.store.StoreError: unknown study.
    """
    study = store.study(study_id)
    order = agent_order(study["agents"], store.participant_count(study_id))
    token = new_invite_token()
    return store.add_participant(study_id, token=token, agent_order=order, label=label), token
