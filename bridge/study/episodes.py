"""Pairwise (A/B) Point-Act studies: a participant's next step, the next pair, the task bucket of an
instruction, and the comparison's written anchors (docs/statistics.md, "Pairwise studies").

RoboArena (Atreya et al. 2025, arXiv:2506.18123, sec. 3): two policies act on the same task from the
same start, back to back, double-blind; the evaluator says which did better (or a tie), gives each a
0-100 progress score and a short reason. Here one episode is one typed instruction; agent A acts on it,
the station restores the same start (exactly, in sim) and agent B acts on it; then the participant
compares. Each half is an ordinary trial row (automatic check, failure stage, recording).

A half that is aborted (e-stop, fault, a lost station, ...) voids its episode: the comparison needs
both halves, and an agent is never charged for a half it did not get to run. A void episode's slot is
offered again within the study's repeat cap, counted over the participant's episodes exactly as
``bridge.study.design.block_progress`` counts a block's trials (a lost station never uses a repeat).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from pointlab.benchmark.pairwise import Episode, next_pair
from pointlab.bridge.study.design import Step, block_progress

__all__ = [
    "PROGRESS_ANCHORS",
    "category_of",
    "episode_outcomes",
    "next_pairwise_step",
    "rated_episodes",
    "pick_pair",
    "open_episode",
]

# What each progress score means, shown on the participant's page beside the two sliders (RoboArena
# asks for 0-100 progress against a task's own milestones; a pick's milestones are these).
PROGRESS_ANCHORS = (
    (0, "Nothing useful: no motion, or it went for the wrong object."),
    (25, "It went to the right object but did not take hold of it."),
    (50, "It took hold of the right object but lost it, or took something else with it."),
    (75, "It did what was asked, but clumsily (knocked something over, an odd grasp)."),
    (100, "It did exactly what was asked."),
)

_RELATION = re.compile(
    r"\b(next to|beside|near|nearest|closest|left of|right of|behind|in front of|on top of|under|"
    r"between|inside|above|below|farthest|furthest)\b"
)
_COUNT = re.compile(r"\b(first|second|third|fourth|fifth|last|two|three|four|middle|\d+(st|nd|rd|th)?)\b")
_ATTRIBUTE = re.compile(
    r"\b(red|green|blue|yellow|orange|purple|pink|black|white|grey|gray|brown|small|smallest|large|"
    r"largest|big|biggest|tall|tallest|short)\b"
)


def category_of(instruction: str) -> str:
    """The task bucket of an instruction, for the task-aware rating (``benchmark.pairwise.bucketed``):
    ``relation`` (names another object to find it by: "the cube next to the bowl"), ``count`` (an
    ordinal or number: "the second cube from the left"), ``attribute`` (a colour or size), else
    ``object`` (a name only). The first rule that matches wins, in that order: the buckets follow
    Point-Bench's kinds of reference (Cheng et al. 2025, "PointArena", sec. 3.1: spatial, counting,
    affordance...), read from words because a participant's instruction has no label."""
    text = " ".join(str(instruction).lower().split())
    for name, rule in (("relation", _RELATION), ("count", _COUNT), ("attribute", _ATTRIBUTE)):
        if rule.search(text):
            return name
    return "object"


def episode_outcomes(episodes: Iterable[Mapping], trials: Mapping[int, Mapping]) -> list[dict]:
    """Each episode (``Store.episodes`` rows, oldest first) as the trial-like row ``block_progress``
    counts: ``id`` (the episode's), ``outcome`` ``running`` (its run has not ended: not counted),
    ``aborted`` (a half aborted, or missing: its run ended without it) | ``None`` (both halves stored,
    not compared yet) | ``succeeded`` (compared: it counts), ``judgement``, and ``abort`` (the aborted
    half's code)."""
    out: list[dict] = []
    for e in episodes:
        if e.get("finished_unix_s") is None:  # still running: neither void nor waiting for a comparison
            out.append({"id": e["id"], "outcome": "running", "judgement": None})
            continue
        halves = [trials.get(e[f"trial_{h}_id"]) if e[f"trial_{h}_id"] is not None else None for h in "ab"]
        aborted = next((h for h in halves if h is not None and h.get("outcome") == "aborted"), None)
        if aborted is not None or any(h is None for h in halves):
            code = (aborted.get("abort") or {}).get("code") if aborted is not None else "interrupted"
            out.append({"id": e["id"], "outcome": "aborted", "judgement": None, "abort": {"code": code}})
        elif e["preference"] is None:
            out.append({"id": e["id"], "outcome": None, "judgement": None})
        else:
            out.append({"id": e["id"], "outcome": "succeeded", "judgement": e["preference"]})
    return out


def next_pairwise_step(
    *, episodes: Sequence[Mapping], trials: Mapping[int, Mapping], episodes_per_participant: int, max_repeats: int
) -> Step:
    """A pairwise participant's next step from what is stored: ``compare`` (``episode_id`` waits for
    the comparison), ``trial`` (type the next episode's instruction; ``trial_number`` is the episode's
    place 1..N, ``repeat`` after a void one), or ``done`` after ``episodes_per_participant`` compared
    episodes (void ones past the repeat cap use up their slot). An episode still running is not
    counted: its slot is the one ``trial`` names."""
    counted = [o for o in episode_outcomes(episodes, trials) if o["outcome"] != "running"]
    p = block_progress(counted, trials_per_agent=episodes_per_participant, max_repeats=max_repeats)
    common: dict[str, Any] = {"trials_per_agent": episodes_per_participant, "n_blocks": 0}
    if p.pending is not None:
        return Step("compare", None, None, p.kept, None, episode_id=p.pending, **common)
    if p.slots_used < episodes_per_participant:
        return Step("trial", None, None, p.slots_used + 1, None, repeat=p.repeat, **common)
    return Step("done", **common)


def rated_episodes(episodes: Iterable[Mapping]) -> list[Episode]:
    """The compared episodes as ``benchmark.pairwise.Episode`` (``a`` acted first; bucket = category)."""
    return [
        Episode(e["agent_a"], e["agent_b"], e["preference"], e.get("category") or "object")
        for e in episodes
        if e.get("preference") is not None
    ]


def pick_pair(study: Mapping, episodes: Iterable[Mapping], rng: np.random.Generator | None = None) -> tuple[str, str]:
    """The next episode's ``(agent_a, agent_b)`` for ``study`` (a ``Store.study`` row) given its
    stored episodes: ``benchmark.pairwise.next_pair`` under the study's ``pair_sampling``, over the
    compared episodes, in random A/B order (the order the halves run in).

    Raises:
        pointlab.benchmark.pairwise.PairwiseError: fewer than two agents or an unknown rule.
    """
    return next_pair(study["agents"], rated_episodes(episodes), rule=study.get("pair_sampling") or "uniform", rng=rng)


def open_episode(store, study: Mapping, participant_id: int, instruction: str, pair: tuple[str, str]) -> dict:
    """Store the participant's next episode of ``pair`` (A, B: the order they act in) on
    ``instruction``, with its task bucket (``category_of``); returns its ``Store.episode`` row (the
    number is the participant's next). Raises StoreError (``Store.create_episode``)."""
    episode_id = store.create_episode(
        study_id=study["id"],
        participant_id=participant_id,
        instruction=instruction,
        category=category_of(instruction),
        agent_a=pair[0],
        agent_b=pair[1],
    )
    return store.episode(episode_id)
