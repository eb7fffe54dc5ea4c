"""Question generation from 3D boxes: the VSI-Bench tasks with ReVSI's filters (ReVSI App. B.8,
sec. 4), balanced answer letters, and per-budget answerability (ReVSI sec. 5).

Tasks (``question_type`` names of the released data):

* ``object_counting``: categories with at least ``counting_min_count`` instances (VSI-Bench: more
  than one; ReVSI also asks single counts, ``counting_min_count=1``); ReVSI's category balancing
  caps each category at ``counting_category_cap`` questions over the whole run.
* ``object_size_estimation``: the longest side of a single-instance object's box, centimetres.
* ``object_abs_distance``: shortest distance between the boxes of two single-instance objects,
  metres, one decimal. ReVSI drops distances below 1 m and randomly drops 80% of the 1-2 m and 50%
  of the 2-3 m questions (our reading of "80% and 50% subsampling rates"; configurable).
* ``object_rel_distance``: which of four categories is closest to / farthest from a
  single-instance anchor (ReVSI adds "farthest"). Options closer than 1 m to the anchor are not
  offered (ReVSI: query-anchor distances below 1 m removed); a question whose answer beats the
  runner-up by less than 0.3 m is dropped (query-anchor differences below 0.3 m).
* ``object_rel_direction_{easy,medium,hard}``: "standing by A, facing B, where is C": left/right;
  left/right/back (back = 135..225 degrees); the four quadrants. ReVSI: objects larger than 1.4 m
  along x or y are not used, triples with a pair closer than 1.5 m are dropped (VSI-Bench's 5 m
  upper bound kept), and angles within 35 degrees of a boundary of the sub-type (0/180;
  0/135/225; 0/90/180/270 -- together the paper's 0, 90, 135, 180, 225, 270) are dropped.
* ``room_size_estimation``: from a floor polygon (``scene.extra["room_polygon"]``) when given,
  else the meta's ``room_size``; square metres, one decimal. Not asked at 16 frames (ReVSI sec. 5).

Multiple-choice answers are placed on the least-used letter so far (ties broken by a seeded random
choice), so answer letters stay balanced per task. Everything random uses ``random.Random`` seeded
from ``config.seed``, the scene id and the task: runs are reproducible and a scene's questions do
not depend on which other scenes are in the run.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import SceneDataError
from .geometry import box_distance_m, direction_angle_deg, horizontal_extent_m, longest_side_cm, polygon_area_m2
from .sampling import parse_budget, sample_frames
from .visibility import VisibilityTable

__all__ = [
    "TASKS",
    "DIRECTION_SUBTYPES",
    "GenerationConfig",
    "LetterBalancer",
    "GenerationReport",
    "generate_questions",
    "expand_budgets",
    "direction_answer",
    "QUESTION_FIELDS",
]

#: what a model runner is given of a record (``records.question_view``): the question, its options
#: and frames; never ``ground_truth``, ``answer_text``, distances or the count in the scene
QUESTION_FIELDS = (
    "id",
    "dataset",
    "scene_name",
    "question_type",
    "question",
    "options",
    "budget",
    "sampler",
    "num_frames",
    "frame_indices",
)

log = logging.getLogger(__name__)

TASKS = (
    "object_counting",
    "object_size_estimation",
    "object_abs_distance",
    "object_rel_distance",
    "object_rel_direction_easy",
    "object_rel_direction_medium",
    "object_rel_direction_hard",
    "room_size_estimation",
)

# sub-type -> (answer of each sector, sector start angles in degrees; counter-clockwise = left)
DIRECTION_SUBTYPES: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "easy": (("left", "right"), (0.0, 180.0)),
    "medium": (("left", "back", "right"), (0.0, 135.0, 225.0)),
    "hard": (("front-left", "back-left", "back-right", "front-right"), (0.0, 90.0, 180.0, 270.0)),
}

_TEMPLATES = {
    "object_counting": "How many {label}(s) are in this room?",
    "object_size_estimation": "What is the length of the longest dimension (length, width, or height) of the {label}, "
    "measured in centimeters?",
    "object_abs_distance": "Measuring from the closest point of each object, what is the direct distance between the "
    "{a} and the {b} (in meters)?",
    "object_rel_distance": "Measuring from the closest point of each object, which of these objects ({choices}) is the "
    "{kind} to the {anchor}?",
    "easy": "If I am standing by the {p} and facing the {o}, is the {q} to my left or the right?",
    "medium": "If I am standing by the {p} and facing the {o}, is the {q} to my left, right, or back? An object is to "
    "my back if I would have to turn at least 135 degrees in order to face it.",
    "hard": "If I am standing by the {p} and facing the {o}, is the {q} to my front-left, front-right, back-left, or "
    "back-right? The directions refer to the quadrants of a Cartesian plane (if I am standing at the origin "
    "and facing along the positive y-axis).",
    "room_size_estimation": "What is the size of this room (in square meters)? If multiple rooms are shown, estimate "
    "the size of the combined space.",
}


@dataclass(frozen=True)
class GenerationConfig:
    """Filters and sizes of one generation run (defaults: ReVSI App. B.8 on VSI-Bench's pipeline)."""

    seed: int = 0
    counting_min_count: int = 2
    counting_category_cap: int | None = 30
    abs_distance_min_m: float = 1.0
    abs_distance_drop: tuple[tuple[float, float, float], ...] = ((1.0, 2.0, 0.8), (2.0, 3.0, 0.5))
    rel_distance_kinds: tuple[str, ...] = ("closest", "farthest")
    rel_distance_min_m: float = 1.0
    rel_distance_min_gap_m: float = 0.3
    direction_max_extent_m: float = 1.4
    direction_min_pair_m: float = 1.5
    direction_max_pair_m: float = 5.0
    direction_margin_deg: float = 35.0
    max_pairs_per_scene: int = 10
    max_anchors_per_scene: int = 4
    max_triples_per_scene: int = 6
    room_size_min_budget: int = 32

    @classmethod
    def vsibench(cls, seed: int = 0) -> "GenerationConfig":
        """VSI-Bench's original thresholds (no ReVSI filters): 10-degree margins, 0.3 m pairs."""
        return cls(
            seed=seed,
            counting_category_cap=None,
            abs_distance_min_m=0.0,
            abs_distance_drop=(),
            rel_distance_kinds=("closest",),
            rel_distance_min_m=0.0,
            rel_distance_min_gap_m=0.15,
            direction_max_extent_m=float("inf"),
            direction_min_pair_m=0.3,
            direction_margin_deg=10.0,
            room_size_min_budget=1,
        )


class LetterBalancer:
    """Puts each correct answer on the least-used letter of its task so far (VSI-Bench's
    ``from_options_to_mc_answer``; ties: seeded random choice)."""

    def __init__(self, seed: int = 0):
        self._rng = random.Random(f"letters:{seed}")
        self.counts: dict[str, Counter] = defaultdict(Counter)

    def place(self, task: str, answer: str, distractors: Sequence[str]) -> tuple[list[str], str]:
        """Returns ``(options as "A. text", correct letter)``."""
        n = len(distractors) + 1
        letters = "ABCDEFGH"[:n]
        used = self.counts[task]
        low = min(used[x] for x in letters)
        letter = self._rng.choice([x for x in letters if used[x] == low])
        others = list(distractors)
        self._rng.shuffle(others)
        k = letters.index(letter)
        ordered = others[:k] + [answer] + others[k:]
        used[letter] += 1
        return [f"{x}. {t}" for x, t in zip(letters, ordered)], letter


@dataclass
class GenerationReport:
    """Counts of a run: questions kept per task, and per task the candidates dropped by each filter."""

    scenes: int = 0
    kept: Counter = field(default_factory=Counter)
    filtered: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))

    def drop(self, task: str, reason: str, n: int = 1) -> None:
        self.filtered[task][reason] += n

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenes": self.scenes,
            "questions": sum(self.kept.values()),
            "per_task": {t: self.kept.get(t, 0) for t in TASKS},
            "filtered": {t: dict(sorted(c.items())) for t, c in sorted(self.filtered.items()) if c},
        }


def direction_answer(angle_deg: float, subtype: str, margin_deg: float) -> str | None:
    """The answer of a relative-direction sub-type for an angle (counter-clockwise from facing),
    or ``None`` when the angle is within ``margin_deg`` of a sector boundary of that sub-type."""
    names, starts = DIRECTION_SUBTYPES[subtype]
    a = angle_deg % 360.0
    for b in starts:
        gap = abs(a - b) % 360.0
        if min(gap, 360.0 - gap) < margin_deg:
            return None
    sector = sum(1 for b in starts if a >= b) - 1
    return names[sector]


def _singles(scene) -> dict[str, Any]:
    by_label: dict[str, list] = defaultdict(list)
    for o in scene.objects:
        by_label[o.label].append(o)
    return by_label


def _record(scene, task: str, question: str, ground_truth: Any, objects: Sequence[str], **extra) -> dict[str, Any]:
    rec = {
        "id": None,
        "dataset": scene.source_dataset,
        "scene_name": scene.scene_id,
        "question_type": task,
        "question": question,
        "options": extra.pop("options", None),
        "ground_truth": ground_truth,
        "objects": list(objects),
    }
    rec.update(extra)
    return rec


def _fmt1(x: float) -> float:
    return round(float(x) + 0.0, 1)


def _scene_questions(scene, cfg: GenerationConfig, letters: LetterBalancer, report: GenerationReport) -> list[dict]:
    if any(o.box is None for o in scene.objects):
        raise SceneDataError(f"scene {scene.scene_id}: every object needs a box for the VSI tasks")
    rng = lambda task: random.Random(f"{cfg.seed}:{scene.scene_id}:{task}")
    by_label = _singles(scene)
    single = sorted(k for k, v in by_label.items() if len(v) == 1)
    out: list[dict] = []

    # counting
    for label in sorted(by_label):
        n = len(by_label[label])
        if n < cfg.counting_min_count:
            report.drop("object_counting", f"count_below_{cfg.counting_min_count}")
            continue
        out.append(
            _record(
                scene,
                "object_counting",
                _TEMPLATES["object_counting"].format(label=label),
                n,
                [o.object_id for o in by_label[label]],
                category=label,
            )
        )

    # size
    for label in single:
        o = by_label[label][0]
        out.append(
            _record(
                scene,
                "object_size_estimation",
                _TEMPLATES["object_size_estimation"].format(label=label),
                int(round(longest_side_cm(o))),
                [o.object_id],
                category=label,
            )
        )
    report.drop("object_size_estimation", "multi_instance_category", sum(1 for v in by_label.values() if len(v) > 1))

    # absolute distance
    r = rng("object_abs_distance")
    pairs = []
    for a, b in itertools.combinations(single, 2):
        d = box_distance_m(by_label[a][0].box, by_label[b][0].box)
        if d < cfg.abs_distance_min_m:
            report.drop("object_abs_distance", f"below_{cfg.abs_distance_min_m:g}m")
            continue
        dropped = False
        for lo, hi, frac in cfg.abs_distance_drop:
            if lo <= d < hi and r.random() < frac:
                report.drop("object_abs_distance", f"subsampled_{lo:g}-{hi:g}m")
                dropped = True
        if not dropped:
            pairs.append((a, b, d))
    if len(pairs) > cfg.max_pairs_per_scene:
        report.drop("object_abs_distance", "per_scene_cap", len(pairs) - cfg.max_pairs_per_scene)
        pairs = r.sample(pairs, cfg.max_pairs_per_scene)
    for a, b, d in pairs:
        if r.random() < 0.5:
            a, b = b, a
        out.append(
            _record(
                scene,
                "object_abs_distance",
                _TEMPLATES["object_abs_distance"].format(a=a, b=b),
                _fmt1(d),
                [by_label[a][0].object_id, by_label[b][0].object_id],
                distance_m=d,
            )
        )

    # relative distance
    r = rng("object_rel_distance")
    anchors = list(single)
    if len(anchors) > cfg.max_anchors_per_scene:
        report.drop(
            "object_rel_distance",
            "per_scene_cap",
            (len(anchors) - cfg.max_anchors_per_scene) * len(cfg.rel_distance_kinds),
        )
        anchors = r.sample(anchors, cfg.max_anchors_per_scene)
    for anchor in anchors:
        a_obj = by_label[anchor][0]
        cand = {}
        for label, objs in by_label.items():
            if label == anchor:
                continue
            dists = [(box_distance_m(a_obj.box, o.box), o.object_id) for o in objs]
            cand[label] = min(dists)
        far_enough = sorted(k for k, v in cand.items() if v[0] >= cfg.rel_distance_min_m)
        for kind in cfg.rel_distance_kinds:
            if len(far_enough) < 4:
                report.drop(
                    "object_rel_distance",
                    "fewer_than_4_options"
                    if len(cand) < 4
                    else f"fewer_than_4_options_beyond_{cfg.rel_distance_min_m:g}m",
                )
                continue
            opts = r.sample(far_enough, 4)
            ranked = sorted(opts, key=lambda k: cand[k][0], reverse=(kind == "farthest"))
            if abs(cand[ranked[0]][0] - cand[ranked[1]][0]) < cfg.rel_distance_min_gap_m:
                report.drop("object_rel_distance", f"gap_below_{cfg.rel_distance_min_gap_m:g}m")
                continue
            options, letter = letters.place("object_rel_distance", ranked[0], ranked[1:])
            q = _TEMPLATES["object_rel_distance"].format(
                choices=", ".join(o.split(". ", 1)[1] for o in options), kind=kind, anchor=anchor
            )
            out.append(
                _record(
                    scene,
                    "object_rel_distance",
                    q,
                    letter,
                    [a_obj.object_id] + [cand[k][1] for k in opts],
                    options=options,
                    answer_text=ranked[0],
                    category=anchor,
                    kind=kind,
                    distances_m={k: cand[k][0] for k in opts},
                )
            )

    # relative direction
    r = rng("object_rel_direction")
    usable = []
    for label in single:
        ex, ey = horizontal_extent_m(by_label[label][0])
        if max(ex, ey) > cfg.direction_max_extent_m:
            report.drop("object_rel_direction", f"object_larger_than_{cfg.direction_max_extent_m:g}m")
        else:
            usable.append(label)
    triples = list(itertools.combinations(usable, 3))
    if len(triples) > cfg.max_triples_per_scene:
        report.drop("object_rel_direction", "triple_per_scene_cap", len(triples) - cfg.max_triples_per_scene)
        triples = r.sample(triples, cfg.max_triples_per_scene)
    for tri in triples:
        objs = {k: by_label[k][0] for k in tri}
        ds = [box_distance_m(objs[x].box, objs[y].box) for x, y in itertools.combinations(tri, 2)]
        if min(ds) < cfg.direction_min_pair_m or max(ds) > cfg.direction_max_pair_m:
            report.drop(
                "object_rel_direction", f"pair_outside_{cfg.direction_min_pair_m:g}-{cfg.direction_max_pair_m:g}m"
            )
            continue
        for p, o, q in ((tri[0], tri[1], tri[2]), (tri[0], tri[2], tri[1]), (tri[1], tri[0], tri[2])):
            angle = direction_angle_deg(objs[p].centroid, objs[o].centroid, objs[q].centroid)
            for sub in ("easy", "medium", "hard"):
                task = f"object_rel_direction_{sub}"
                ans = direction_answer(angle, sub, cfg.direction_margin_deg)
                if ans is None:
                    report.drop(task, f"within_{cfg.direction_margin_deg:g}deg_of_boundary")
                    continue
                names = DIRECTION_SUBTYPES[sub][0]
                options, letter = letters.place(task, ans, [x for x in names if x != ans])
                out.append(
                    _record(
                        scene,
                        task,
                        _TEMPLATES[sub].format(p=p, o=o, q=q),
                        letter,
                        [objs[p].object_id, objs[o].object_id, objs[q].object_id],
                        options=options,
                        answer_text=ans,
                        angle_deg=angle,
                    )
                )

    # room size
    poly = scene.extra.get("room_polygon") if isinstance(scene.extra, dict) else None
    area = polygon_area_m2(poly) if poly else scene.room_size_m2
    if area is None or not area > 0:
        report.drop("room_size_estimation", "no_room_size")
    else:
        out.append(
            _record(
                scene,
                "room_size_estimation",
                _TEMPLATES["room_size_estimation"],
                _fmt1(area),
                [],
                room_size_source="polygon" if poly else "meta",
            )
        )

    for i, rec in enumerate(out):
        rec["id"] = f"{scene.scene_id}:{rec['question_type']}:{i}"
    return out


def generate_questions(scenes: Iterable, config: GenerationConfig | None = None) -> tuple[list[dict], GenerationReport]:
    """Questions for every scene (``pointlab.benchmark.scenes.Scene`` with boxes), in scene order.

    Returns ``(records, report)``; records carry the released data's fields (``id``, ``dataset``,
    ``scene_name``, ``question_type``, ``question``, ``options``, ``ground_truth``) plus ``objects``
    (the object ids the question needs) and task details. Counting's category cap is applied over
    the whole run.

    Raises:
        SceneDataError: a scene object without a box.
    """
    cfg = config or GenerationConfig()
    letters = LetterBalancer(cfg.seed)
    report = GenerationReport()
    out: list[dict] = []
    for scene in scenes:
        report.scenes += 1
        out.extend(_scene_questions(scene, cfg, letters, report))
    if cfg.counting_category_cap is not None:
        by_cat: dict[str, list[int]] = defaultdict(list)
        for i, rec in enumerate(out):
            if rec["question_type"] == "object_counting":
                by_cat[rec["category"]].append(i)
        rng = random.Random(f"{cfg.seed}:counting_category_cap")
        drop: set[int] = set()
        for cat in sorted(by_cat):
            idx = by_cat[cat]
            if len(idx) > cfg.counting_category_cap:
                drop |= set(idx) - set(rng.sample(idx, cfg.counting_category_cap))
        if drop:
            report.drop("object_counting", f"category_cap_{cfg.counting_category_cap}", len(drop))
            out = [rec for i, rec in enumerate(out) if i not in drop]
    report.kept = Counter(rec["question_type"] for rec in out)
    return out, report


def expand_budgets(
    questions: Sequence[dict],
    budgets: Sequence[int | str],
    *,
    total_frames: int | None = None,
    visibility: VisibilityTable | None = None,
    sampler: str = "nested",
    config: GenerationConfig | None = None,
) -> tuple[list[dict], dict[str, Any]]:
    """One record per (question, budget) that is answerable from that budget's frames.

    With ``total_frames`` and a visibility table: the budget's frames are sampled (``sampler``);
    a question is kept only when every object it needs is seen in them, and counting's ground truth
    becomes the number of instances seen (dropped below ``counting_min_count``); room size is not
    asked below ``room_size_min_budget`` frames. Every record gets ``budget``, ``sampler``,
    ``num_frames``, ``frame_indices`` and ``answerability``.
    Without frames: one record per question, budget ``"all"``, frames unknown
    (``answerability="unchecked: no frames"``).

    Returns ``(records, {budget: {"kept": {task: n}, "dropped": {reason: n}}})``.
    Raises ``ValueError`` for a bad budget or sampler.
    """
    cfg = config or GenerationConfig()
    stats: dict[str, Any] = {}
    out: list[dict] = []
    if total_frames is None or visibility is None:
        for q in questions:
            out.append(
                {
                    **q,
                    "budget": "all",
                    "sampler": None,
                    "num_frames": None,
                    "frame_indices": None,
                    "answerability": "unchecked: no frames",
                }
            )
        stats["all"] = {"kept": dict(Counter(q["question_type"] for q in questions)), "dropped": {}}
        return out, stats
    for b in budgets:
        sel = sample_frames(total_frames, parse_budget(b), sampler)
        kept: Counter[str] = Counter()
        dropped: Counter[str] = Counter()
        for q in questions:
            task = q["question_type"]
            rec = {
                **q,
                "id": f"{q['id']}@{sel.budget}",
                "budget": sel.budget,
                "sampler": sel.sampler,
                "num_frames": sel.num_frames,
                "frame_indices": list(sel.indices),
                "answerability": "all objects visible in the sampled frames",
            }
            if task == "room_size_estimation":
                if sel.budget != "all" and int(sel.budget) < cfg.room_size_min_budget:
                    dropped[f"room_size_below_{cfg.room_size_min_budget}_frames"] += 1
                    continue
                rec["answerability"] = "room size: not checked against frames"
            elif task == "object_counting":
                n = visibility.count(q["category"], sel.indices)
                if n < cfg.counting_min_count:
                    dropped[f"{task}: fewer_than_{cfg.counting_min_count}_seen"] += 1
                    continue
                rec["ground_truth"] = n
                rec["count_in_scene"] = q["ground_truth"]
            elif not visibility.visible(q["objects"], sel.indices):
                dropped[f"{task}: object_not_seen"] += 1
                continue
            kept[task] += 1
            out.append(rec)
        stats[str(sel.budget)] = {"kept": dict(kept), "dropped": dict(dropped), "num_frames": sel.num_frames}
    return out, stats
