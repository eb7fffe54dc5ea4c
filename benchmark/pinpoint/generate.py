"""PinpointQA question generation from scenes (sec. 3.2 "Task-specific QA Generation", App. A.3).

Every task is instantiated from the same ``TargetRepresentation``:

- **TPV**: one positive per retained target ("Yes"), and as many negatives per scene, drawn from
  vocabulary labels whose category is absent from the scene ("No").
- **NRI**: the correct option is the closest valid reference (support, floor/wall and contacts
  excluded); a near tie with the next-closest label (within ``NRI_TIE_M`` or ``NRI_TIE_REL`` of
  the winner's distance) discards the question; three distinct distractors: labels in the scene
  that are clearly farther, then vocabulary labels absent from the scene; the answer letter is
  drawn uniformly.
- **FSD**: the support as main anchor ("The cup is on the table."), else the closest valid
  reference; up to two more references with relation phrases and distances rounded to whole cm.
- **SSP**: ``{"target", "support_surface", "references": [{"object", "relation", "distance_cm"}]}``
  with up to two closest references, distances in cm with one decimal.

Records carry the released field names: ``id, scene_id, source_dataset, task, question_type,
question, instruction, answer, target, choices``. Randomness comes from one seeded generator per
scene (seed and scene id), so output does not depend on scene order.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

import numpy as np

from ..scenes.model import Scene
from .normalize import RELATIONS
from .scoring import QUESTION_TYPES
from .spatial import CONTACT_M, SceneIndex, TargetRepresentation, build_representation, valid_targets
from .vocabulary import VOCABULARY_GROUPS, category_of, is_floor_or_wall, is_structural

__all__ = [
    "RELATION_PHRASES",
    "NRI_TIE_M",
    "NRI_TIE_REL",
    "INSTRUCTIONS",
    "GenerationStats",
    "generate_scene",
    "fsd_text",
    "ssp_answer",
    "round_cm",
]

NRI_TIE_M = 0.02  # two closest reference labels within 2 cm ...
NRI_TIE_REL = 0.10  # ... or within 10 % of the closest distance are a near tie

#: how each relation reads in an FSD sentence ("The scissors is to the side of and above the rack").
RELATION_PHRASES = {
    "on": "on",
    "under": "under",
    "above": "above",
    "below": "below",
    "side_above": "to the side of and above",
    "side_below": "to the side of and below",
    "next_to": "next to",
    "near": "near",
    "attached_to": "attached to",
}

INSTRUCTIONS = {
    "TPV": "Answer with Yes or No only.",
    "NRI": (
        "Choose the object closest to the target, not counting the surface it rests on, the floor, the walls, "
        "or objects touching it. Answer with the option letter only."
    ),
    "FSD": (
        "Describe where the target is so that a person could find it: name the surface it is on (or its main "
        "anchor), up to two nearby reference objects, the spatial relation to each, and each distance in "
        "centimeters."
    ),
    "SSP": (
        'Answer with a JSON object only: {"target": str, "support_surface": str or null, "references": '
        '[{"object": str, "relation": one of ' + ", ".join(RELATIONS) + ', "distance_cm": number}]} '
        "with up to two references, closest first."
    ),
}


def round_cm(distance_m: float) -> int:
    """Whole centimetres, halves rounded up (not to even): 0.125 m -> 13 cm."""
    return int(math.floor(distance_m * 100.0 + 0.5))


def _cm1(distance_m: float) -> float:
    return math.floor(distance_m * 1000.0 + 0.5) / 10.0


@dataclass
class GenerationStats:
    """What generation kept and dropped, per reason (for the summary)."""

    scenes: int = 0
    scenes_with_targets: int = 0
    targets: int = 0
    dropped: dict = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


def _rng(seed: int, scene_id: str) -> np.random.Generator:
    h = int.from_bytes(hashlib.sha256(f"{seed}:{scene_id}".encode()).digest()[:8], "little")
    return np.random.default_rng(h)


def _record(scene: Scene, task: str, n: int, question: str, answer: str, target: str, choices=None) -> dict:
    # a file may hold several annotations of one scene (ReVSI's revsi / vsi): the id names it
    prefix = f"{scene.scene_id}_{scene.variant}" if scene.variant else scene.scene_id
    return {
        "id": f"{prefix}_{task.lower()}_{n:03d}",
        "scene_id": scene.scene_id,
        "source_dataset": scene.source_dataset,
        "task": task,
        "question_type": QUESTION_TYPES[task],
        "question": question,
        "instruction": INSTRUCTIONS[task],
        "answer": answer,
        "target": target,
        "choices": choices,
    }


def _phrase(rel: str, label: str, distance_m: float) -> str:
    cm = round_cm(distance_m)
    where = f"{RELATION_PHRASES[rel]} the {label}"
    return f"{where}, touching it" if cm == 0 else f"{where}, about {cm} cm away"


def fsd_text(rep: TargetRepresentation) -> str | None:
    """The FSD ground-truth description, or None when the target has no anchor at all."""
    t = rep.target.label
    refs = list(rep.references)
    if rep.support is not None:
        s = rep.support
        sentences = [f"The {t} is {RELATION_PHRASES[s.relation]} the {s.label}."]
        extra = refs[:2]
        lead = ["It is also", "It is further"]
    elif refs:
        sentences = [f"The {t} is {_phrase(refs[0].relation, refs[0].label, refs[0].shortest_m)}."]
        extra = refs[1:3]
        lead = ["It is also", "It is further"]
    else:
        return None
    for word, r in zip(lead, extra):
        sentences.append(f"{word} {_phrase(r.relation, r.label, r.shortest_m)}.")
    return " ".join(sentences)


def ssp_answer(rep: TargetRepresentation) -> dict:
    """The SSP ground-truth object (distances in cm with one decimal)."""
    return {
        "target": rep.target.label,
        "support_surface": None if rep.support is None else rep.support.label,
        "references": [
            {"object": r.label, "relation": r.relation, "distance_cm": _cm1(r.shortest_m)} for r in rep.references[:2]
        ],
    }


def _nri(
    rep: TargetRepresentation, idx: SceneIndex, rng: np.random.Generator, stats: GenerationStats
) -> tuple[str, list[str]] | None:
    cands = [r for r in rep.references if not r.contact and r.shortest_m > CONTACT_M]
    if not cands:
        stats.drop("nri_no_valid_reference")
        return None
    best = cands[0]
    if len(cands) > 1:
        margin = max(NRI_TIE_M, NRI_TIE_REL * best.shortest_m)
        if cands[1].shortest_m - best.shortest_m < margin:
            stats.drop("nri_near_tie")
            return None
    margin = max(NRI_TIE_M, NRI_TIE_REL * best.shortest_m)
    if rep.support is not None and any(
        n.label == rep.support.label
        and n is not rep.support
        and not n.contact
        and n.shortest_m < best.shortest_m + margin
        for n in rep.neighbours
    ):
        # another instance of the support's label (a second table) is as near as the answer
        stats.drop("nri_near_tie")
        return None
    excluded = {rep.target.label, best.label}
    if rep.support is not None:
        excluded.add(rep.support.label)
    contacts = {n.label for n in rep.neighbours if n.contact}
    farther = [r.label for r in cands[1:]]
    # other labels of the scene qualify only when every instance is clearly farther than the answer
    # (an object whose centroid is beyond 1 m can still have a near surface)
    ti = idx.scene.objects.index(rep.target)
    bar = best.shortest_m + margin
    close_enough: set[str] = set()
    labels: set[str] = set()
    for j, o in enumerate(idx.scene.objects):
        lbl = o.label
        if (
            lbl in excluded
            or lbl in contacts
            or lbl in farther
            or is_floor_or_wall(lbl)
            or is_structural(lbl)
            or category_of(lbl) == rep.category
            or lbl in close_enough
        ):
            continue
        labels.add(lbl)
        # the box gap is a cheap lower bound: only objects that might be near get the exact distance
        if idx.gap_lower_bound(ti, j) < bar and idx.shortest(ti, j) < bar:
            close_enough.add(lbl)
    pool_scene = sorted(labels - close_enough)
    present_cats = {category_of(o.label) for o in idx.scene.objects}
    pool_absent = sorted(
        v for v, cat in ((v, category_of(v)) for v in _ALL_VARIANTS) if cat not in present_cats and v not in excluded
    )
    distractors: list[str] = []
    for pool in (farther, list(rng.permutation(pool_scene)), list(rng.permutation(pool_absent))):
        for lbl in pool:
            if len(distractors) == 3:
                break
            if lbl not in distractors and lbl not in excluded:
                distractors.append(str(lbl))
    if len(distractors) < 3:
        stats.drop("nri_too_few_distractors")
        return None
    options = list(distractors)
    pos = int(rng.integers(0, 4))
    options.insert(pos, best.label)
    return "ABCD"[pos], [f"{'ABCD'[k]}. {o}" for k, o in enumerate(options)]


_ALL_VARIANTS = tuple(sorted(v for variants in VOCABULARY_GROUPS.values() for v in variants))


def generate_scene(
    scene: Scene, seed: int = 0, stats: GenerationStats | None = None, index: SceneIndex | None = None
) -> tuple[list[dict], list[dict]]:
    """All four tasks for one scene.

    Returns:
        ``(records, representations)``: question records (released field names) and the
        intermediate representations they came from (``TargetRepresentation.to_dict``).
    """
    stats = stats if stats is not None else GenerationStats()
    stats.scenes += 1
    targets = valid_targets(scene)
    if not targets:
        stats.drop("scene_without_valid_target")
        return [], []
    stats.scenes_with_targets += 1
    idx = index if index is not None else SceneIndex(scene)
    rng = _rng(seed, scene.scene_id)
    scene_labels = {o.label for o in scene.objects}
    reps = [build_representation(idx, i) for i in targets]
    stats.targets += len(reps)
    records: list[dict] = []
    counters = {t: 0 for t in QUESTION_TYPES}

    def add(task: str, question: str, answer: str, target: str, choices=None) -> None:
        counters[task] += 1
        records.append(_record(scene, task, counters[task], question, answer, target, choices))

    # TPV: positives, then as many negatives from absent categories
    present = {category_of(lbl) for lbl in scene_labels} - {None}
    for rep in reps:
        add("TPV", f"Did the {rep.target.label} appear in the video?", "Yes", rep.target.label)
    absent = [v for v in _ALL_VARIANTS if category_of(v) not in present]
    for v in rng.choice(absent, size=min(len(reps), len(absent)), replace=False) if absent else []:
        add("TPV", f"Did the {v} appear in the video?", "No", str(v))
    for rep in reps:
        t = rep.target.label
        nri = _nri(rep, idx, rng, stats)
        if nri is not None:
            letter, choices = nri
            add("NRI", f"Which object is nearest to the {t}, not counting the surface it rests on?", letter, t, choices)
        text = fsd_text(rep)
        if text is None:
            stats.drop("fsd_no_anchor")
        else:
            add("FSD", f"Where is the {t} in the video? Describe the final location of the {t} in the video.", text, t)
        ssp = ssp_answer(rep)
        if not ssp["references"]:
            stats.drop("ssp_no_reference")
        else:
            add(
                "SSP",
                f"Output the final location of the {t} in the video as structured JSON.",
                json.dumps(ssp, ensure_ascii=False),
                t,
            )
    return records, [r.to_dict() for r in reps]
