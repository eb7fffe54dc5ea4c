"""Point-Bench authoring (PointArena sec. 3.2): candidates, model answers, the 3-model filter,
drawn masks, verification by a second person, and export of the verified items as a dataset.

Pipeline per candidate (an image from a folder, or an arena battle promoted with its votes):

1. an annotator (identified by a token -> name) writes a category and a query; the query goes to
   N anonymous models (``record_ask``; the answers are kept server side);
2. the annotator draws one mask per target instance at full resolution; ``model_results`` scores
   every model answer against those masks with the Point-Bench rules (``scoring.score_points``);
   the **filter**: the query is accepted when **at most one** model is correct (``filter_passed``),
   otherwise it is refused unless the annotator keeps it anyway (``filter_passed`` false is
   recorded, with the model results);
3. a **different** person verifies it: accept, or reject with a reason; only accepted items enter the
   dataset;
4. ``export_dataset`` writes the release layout (``data.json``, ``images/<category>/``, ``masks/``:
   the union mask, value 255 = target, plus one mask per instance, ``instance_mask_filenames``) and
   ``gt.jsonl``; every entry records ``drawn_by``, ``verified_by``, ``model_results``,
   ``filter_passed`` and its ``source`` (``folder`` or ``arena:<battle id>``).

State lives in ``<dataset>/.annotation/``: ``annotation.db`` (SQLite through SQLAlchemy) and the
instance masks as PNG files. The export is rewritten after every verification, so the dataset folder
is always a valid Point-Bench dataset of the verified items (``pointlab bench pointing --data``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from sqlalchemy import JSON, Boolean, Float, Integer, String, Text, create_engine, event, func, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from ..records import replaced_on_success
from .dataset import DatasetError, load_release, normalise_category, write_gt_jsonl
from .masks import mask_png
from .scoring import score_points

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["AnnotationStore", "AnnotationError", "model_results", "filter_passes", "MAX_CORRECT", "MAX_ITEMS_PER_IMAGE"]

MAX_CORRECT = 1  # the paper's filter: kept when "one or fewer models produced a correct prediction"
# items (drawn or verified; a rejected one frees its place) one image may hold: Point-Bench has one
# query per image, and a few more let a second query of another category be written on a rich scene
MAX_ITEMS_PER_IMAGE = 3
STATE_DIR = ".annotation"


class AnnotationError(BenchmarkError, ValueError):
    """A refused annotation action; ``status`` is the HTTP status the web layer answers with."""

    def __init__(self, message: str, status: int = 400, detail: Any = None):
        super().__init__(message)
        self.status, self.detail = status, detail


class _Base(DeclarativeBase):
    pass


class CandidateRow(_Base):
    __tablename__ = "candidates"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    image: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(80))
    suggested_query: Mapped[str | None] = mapped_column(Text, nullable=True)
    arena: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # battle answers and vote
    created_unix_s: Mapped[float] = mapped_column(Float)


class AskRow(_Base):
    __tablename__ = "asks"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    candidate_id: Mapped[str] = mapped_column(String(40), index=True)
    query: Mapped[str] = mapped_column(Text)
    answers: Mapped[list] = mapped_column(JSON)  # [{alias, model, points_px, parse_error, error}]
    asked_by: Mapped[str] = mapped_column(String(64))
    created_unix_s: Mapped[float] = mapped_column(Float)


class ItemRow(_Base):
    __tablename__ = "items"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    candidate_id: Mapped[str] = mapped_column(String(40), index=True)
    category: Mapped[str] = mapped_column(String(16))
    query: Mapped[str] = mapped_column(Text)
    count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reference_points_px: Mapped[list | None] = mapped_column(JSON, nullable=True)
    instance_masks: Mapped[list] = mapped_column(JSON)  # file names under .annotation/masks/
    model_results: Mapped[list] = mapped_column(JSON)
    filter_passed: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String(16), default="drawn")  # drawn | verified | rejected
    drawn_by: Mapped[str] = mapped_column(String(64))
    drawn_unix_s: Mapped[float] = mapped_column(Float)
    verified_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    verified_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    verdict_reason: Mapped[str | None] = mapped_column(Text, nullable=True)


def model_results(
    answers: Sequence[dict], category: str, instance_masks: Sequence[np.ndarray], count: int | None
) -> list[dict]:
    """Each model answer scored against the drawn masks (Point-Bench rules): ``[{alias, model,
    points_px, correct, reason}]``; a failed or unparseable answer is not correct."""
    union = np.logical_or.reduce(list(instance_masks)) if instance_masks else None
    out = []
    for a in answers:
        pts = a.get("points_px") or []
        if a.get("error"):
            ok, reason = False, "model_error"
        elif not pts:
            ok, reason = False, "unparseable" if a.get("parse_error") else "no_points"
        else:
            ok, reason, _ = score_points(pts, category, union, instance_masks=list(instance_masks), count=count)
        out.append({"alias": a["alias"], "model": a["model"], "points_px": pts, "correct": bool(ok), "reason": reason})
    return out


def filter_passes(results: Sequence[dict], max_correct: int = MAX_CORRECT) -> bool:
    """PointArena sec. 3.2: a query is hard enough when at most ``max_correct`` models are correct."""
    return sum(1 for r in results if r["correct"]) <= max_correct


class AnnotationStore:
    """The authoring state of one dataset folder ``out`` (see the module docstring)."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.state = self.out / STATE_DIR
        (self.state / "masks").mkdir(parents=True, exist_ok=True)
        self.engine = create_engine(
            f"sqlite:///{self.state / 'annotation.db'}", connect_args={"check_same_thread": False, "timeout": 10}
        )

        @event.listens_for(self.engine, "connect")
        def _pragmas(conn, _):
            cur = conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        _Base.metadata.create_all(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        # one server process per dataset folder (``pointlab bench annotate``): the per-image cap's
        # count-then-insert and the export's rewrite of the dataset files are serialized here
        self._submit_lock = threading.Lock()
        self._export_lock = threading.Lock()

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        with self._sessions() as s, s.begin():
            yield s

    # -- candidates ---------------------------------------------------------------------------
    def add_candidate(
        self,
        image: str | Path,
        source: str = "folder",
        *,
        suggested_query: str | None = None,
        arena: dict | None = None,
    ) -> str:
        """Add an image (idempotent per image path + source); returns the candidate id."""
        image = str(Path(image).resolve())
        cid = hashlib.sha256(f"{source}\n{image}".encode()).hexdigest()[:24]
        with self._tx() as s:
            if s.get(CandidateRow, cid) is None:
                s.add(
                    CandidateRow(
                        id=cid,
                        image=image,
                        source=source,
                        suggested_query=suggested_query,
                        arena=arena,
                        created_unix_s=time.time(),
                    )
                )
        return cid

    def add_folder(self, folder: str | Path) -> list[str]:
        """Every image of ``folder`` (png, jpg, jpeg, webp; sorted) as a candidate."""
        d = Path(folder)
        if not d.is_dir():
            raise AnnotationError(f"{d} is not a folder of images")
        return [
            self.add_candidate(p)
            for p in sorted(d.iterdir())
            if p.is_file() and p.suffix.lower() in (".png", ".jpg", ".jpeg", ".webp")
        ]

    def promote_battles(self, battles: Sequence[dict], copy_to: str | Path | None = None) -> list[str]:
        """Arena battles with votes become candidates (the paper's augmentation of Point-Bench with
        Point-Battle content): the image, the instruction as the suggested query, both answers and the
        vote kept in ``arena``. They go through the same mask and verification steps."""
        out = []
        for b in battles:
            if b.get("vote") is None:
                continue
            img = Path(b["image_path"])
            if copy_to is not None:  # uploads may be cleaned up: keep a copy with the dataset state
                dst = Path(copy_to) / f"{b['image_sha256'][:16]}{img.suffix}"
                dst.parent.mkdir(parents=True, exist_ok=True)
                if not dst.exists():
                    shutil.copyfile(img, dst)
                img = dst
            arena = {
                "battle_id": b["id"],
                "vote": b["vote"],
                "instruction": b["instruction"],
                "answers": {
                    b["model_a"]: (b.get("answer_a") or {}).get("points_px"),
                    b["model_b"]: (b.get("answer_b") or {}).get("points_px"),
                },
            }
            out.append(self.add_candidate(img, f"arena:{b['id']}", suggested_query=b["instruction"], arena=arena))
        return out

    def candidates(self, *, open_only: bool = True) -> list[dict]:
        """Candidates in insertion order (``open_only``: not yet drawn, or drawn and rejected)."""
        with self._tx() as s:
            rows = s.scalars(select(CandidateRow).order_by(CandidateRow.created_unix_s, CandidateRow.id)).all()
            busy = {r.candidate_id for r in s.scalars(select(ItemRow).where(ItemRow.status != "rejected")).all()}
        return [
            {
                "id": r.id,
                "image": r.image,
                "source": r.source,
                "suggested_query": r.suggested_query,
                "arena": r.arena,
                "drawn": r.id in busy,
            }
            for r in rows
            if not (open_only and r.id in busy)
        ]

    def candidate(self, cid: str) -> dict:
        with self._tx() as s:
            r = s.get(CandidateRow, cid)
            if r is None:
                raise AnnotationError("unknown candidate", 404)
            return {
                "id": r.id,
                "image": r.image,
                "source": r.source,
                "suggested_query": r.suggested_query,
                "arena": r.arena,
            }

    # -- asking the models --------------------------------------------------------------------
    def record_ask(self, cid: str, query: str, answers: Sequence[dict], asked_by: str) -> str:
        """Keep the anonymous answers ``[{alias, model, points_px, parse_error, error}]`` of one query."""
        self.candidate(cid)
        aid = uuid.uuid4().hex
        with self._tx() as s:
            s.add(
                AskRow(
                    id=aid,
                    candidate_id=cid,
                    query=query,
                    answers=list(answers),
                    asked_by=asked_by,
                    created_unix_s=time.time(),
                )
            )
        return aid

    def ask(self, aid: str) -> dict:
        with self._tx() as s:
            r = s.get(AskRow, aid)
            if r is None:
                raise AnnotationError("unknown model query (ask the models first)", 404)
            return {"id": r.id, "candidate_id": r.candidate_id, "query": r.query, "answers": r.answers}

    # -- drawn items --------------------------------------------------------------------------
    def submit(
        self,
        *,
        cid: str,
        ask_id: str,
        category: str,
        instance_masks: Sequence[np.ndarray],
        drawn_by: str,
        keep_anyway: bool = False,
        reference_points_px: Sequence[Sequence[float]] | None = None,
    ) -> dict:
        """Store a drawn item after the filter (see the module docstring).

        Raises:
            AnnotationError: 400 (bad category, no mask, an empty instance, a steerable item without
                reference point), 404 (unknown candidate / ask), 409 (the filter refused it and
                ``keep_anyway`` is false: ``detail`` holds the model results).
        """
        try:
            category = normalise_category(category)
        except DatasetError as e:
            raise AnnotationError(str(e), 400) from None
        ask = self.ask(ask_id)
        if ask["candidate_id"] != cid:
            raise AnnotationError("that model query belongs to another candidate", 400)
        self.candidate(cid)
        masks = [np.asarray(m, bool) for m in instance_masks]
        if not masks:
            raise AnnotationError("draw at least one mask", 400)
        if any(not m.any() for m in masks):
            raise AnnotationError("every instance mask needs at least one target pixel", 400)
        if category == "steerable" and not reference_points_px:
            raise AnnotationError("a steerable item needs its reference point", 400)
        refs = _reference_points(reference_points_px, *masks[0].shape)
        count = len(masks) if category == "counting" else None
        results = model_results(ask["answers"], category, masks, count)
        passed = filter_passes(results)
        if not passed and not keep_anyway:
            n = sum(r["correct"] for r in results)
            raise AnnotationError(
                f"{n} of {len(results)} models got this query right (at most {MAX_CORRECT} may): "
                "write a harder query, or keep it with its model results",
                409,
                results,
            )
        iid = uuid.uuid4().hex[:16]
        files = []
        for k, m in enumerate(masks):
            name = f"{iid}_{k}.png"
            (self.state / "masks" / name).write_bytes(mask_png(m))
            files.append(name)
        with self._submit_lock, self._tx() as s:
            held = s.scalar(
                select(func.count())
                .select_from(ItemRow)
                .where(ItemRow.candidate_id == cid, ItemRow.status != "rejected")
            )
            if (held or 0) >= MAX_ITEMS_PER_IMAGE:  # (a count is never NULL)
                for name in files:
                    (self.state / "masks" / name).unlink(missing_ok=True)
                raise AnnotationError(
                    f"this image already has {held} items (at most {MAX_ITEMS_PER_IMAGE}); choose another image", 409
                )
            s.add(
                ItemRow(
                    id=iid,
                    candidate_id=cid,
                    category=category,
                    query=ask["query"],
                    count=count,
                    reference_points_px=refs,
                    instance_masks=files,
                    model_results=results,
                    filter_passed=passed,
                    status="drawn",
                    drawn_by=drawn_by,
                    drawn_unix_s=time.time(),
                )
            )
        return {"item_id": iid, "filter_passed": passed, "model_results": results}

    def items(self, status: str | None = None) -> list[dict]:
        with self._tx() as s:
            q = (
                select(ItemRow, CandidateRow)
                .join(CandidateRow, CandidateRow.id == ItemRow.candidate_id)
                .order_by(ItemRow.drawn_unix_s)
            )
            if status is not None:
                q = q.where(ItemRow.status == status)
            return [_item_dict(i, c) for i, c in s.execute(q).all()]

    def item(self, iid: str) -> dict:
        with self._tx() as s:
            i = s.get(ItemRow, iid)
            if i is None:
                raise AnnotationError("unknown item", 404)
            return _item_dict(i, s.get(CandidateRow, i.candidate_id))

    def mask_path(self, name: str) -> Path:
        return self.state / "masks" / name

    def verify(self, iid: str, verifier: str, accept: bool, reason: str = "") -> dict:
        """A second person's verdict: one conditional update (the item must still be ``drawn`` and
        drawn by someone else), so of any number of concurrent verdicts exactly one wins.

        Raises: AnnotationError 403 (the drawer verifying their own item), 409 (already decided,
        possibly a moment ago by a concurrent verdict), 404 (unknown item), 400 (a rejection
        without a reason)."""
        reason = (reason or "").strip()
        if not accept and not reason:
            raise AnnotationError("a rejection needs a reason", 400)
        with self._tx() as s:
            won = s.execute(
                update(ItemRow)
                .where(ItemRow.id == iid, ItemRow.status == "drawn", ItemRow.drawn_by != verifier)
                .values(
                    status="verified" if accept else "rejected",
                    verified_by=verifier,
                    verified_unix_s=time.time(),
                    verdict_reason=reason or None,
                )
            ).rowcount  # type: ignore[attr-defined]  # an UPDATE's Result is a CursorResult (SQLAlchemy types it as Result)
            if won != 1:
                i = s.get(ItemRow, iid)
                if i is None:
                    raise AnnotationError("unknown item", 404)
                if i.drawn_by == verifier:
                    raise AnnotationError("an item is verified by someone other than its annotator", 403)
                raise AnnotationError(f"this item is already {i.status}", 409)
        self.export()
        return self.item(iid)

    # -- export -------------------------------------------------------------------------------
    def export(self) -> list:
        """Write the verified items as a dataset in ``out`` (see the module docstring); returns the
        loaded items (``[]`` and no files when nothing is verified yet). ``data.json`` and
        ``gt.jsonl`` are written to temporary names and renamed into place, one export at a time, so a
        reader sees the previous complete dataset or the new one, and only verified items."""
        with self._export_lock:
            return self._export()

    def _export(self) -> list:
        items = self.items("verified")
        if not items:
            return []
        entries = []
        (self.out / "masks").mkdir(parents=True, exist_ok=True)
        for it in items:
            src = Path(it["image"])
            img_name = f"{it['item_id']}{src.suffix.lower()}"
            dst = self.out / "images" / it["category"] / img_name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                shutil.copyfile(src, dst)
            inst = []
            union = None
            for k, name in enumerate(it["instance_masks"]):
                m = _read_mask(self.mask_path(name))
                union = m if union is None else (union | m)
                out_name = f"{it['item_id']}_inst{k}.png"
                (self.out / "masks" / out_name).write_bytes(mask_png(m))
                inst.append(out_name)
            assert union is not None  # an item holds at least one instance mask (add_item refuses none)
            (self.out / "masks" / f"{it['item_id']}.png").write_bytes(mask_png(union))
            e = {
                "image_filename": img_name,
                "mask_filename": f"{it['item_id']}.png",
                "user_input": it["query"],
                "category": it["category"],
                "source": it["source"],
                "drawn_by": it["drawn_by"],
                "verified_by": it["verified_by"],
                "filter_passed": it["filter_passed"],
                "model_results": it["model_results"],
                "annotation_id": it["item_id"],
            }
            if it["category"] == "counting" or len(inst) > 1:
                e["instance_mask_filenames"] = inst
            if it["count"] is not None:
                e["count"] = it["count"]
            if it["reference_points_px"]:
                e["reference_points_px"] = it["reference_points_px"]
            entries.append(e)
        with replaced_on_success(self.out / "data.json") as tmp:
            tmp.write_text(json.dumps(entries, indent=1), encoding="utf-8")
        loaded = load_release(self.out)
        with replaced_on_success(self.out / "gt.jsonl") as tmp:
            write_gt_jsonl(loaded, tmp)
        return loaded


def _reference_points(points, height: int, width: int) -> list[list[float]] | None:
    """Reference points as ``[[u, v], ...]`` floats, each finite and on the image (pixel centres at
    integers: ``0 <= u <= width - 1``, ``0 <= v <= height - 1``); ``None`` when there are none.

    Raises: AnnotationError 400 otherwise."""
    if not points:
        return None
    out = []
    for p in points:
        try:
            u, v = (float(c) for c in p)
        except (TypeError, ValueError):
            raise AnnotationError(f"a reference point is [u, v] in pixels, got {p!r}", 400) from None
        if not (np.isfinite(u) and np.isfinite(v) and 0 <= u <= width - 1 and 0 <= v <= height - 1):
            raise AnnotationError(f"reference point {p!r} is not on the {width}x{height} image", 400)
        out.append([u, v])
    return out


def _read_mask(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("L")) > 127


def _item_dict(i: ItemRow, c: CandidateRow | None) -> dict:
    return {
        "item_id": i.id,
        "candidate_id": i.candidate_id,
        "image": c.image if c else None,
        "source": c.source if c else None,
        "category": i.category,
        "query": i.query,
        "count": i.count,
        "reference_points_px": i.reference_points_px,
        "instance_masks": i.instance_masks,
        "model_results": i.model_results,
        "filter_passed": i.filter_passed,
        "status": i.status,
        "drawn_by": i.drawn_by,
        "verified_by": i.verified_by,
        "reason": i.verdict_reason,
    }
