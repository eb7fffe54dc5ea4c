"""The annotation app: ``create_annotate_app(store, agents, tokens)``.

Pages: ``/`` (draw: query, models, masks) and ``/verify`` (accept or reject). Every ``/api`` route
takes ``Authorization: Bearer <token>``; ``tokens`` maps each token to a person's name, which is
what the dataset records as ``drawn_by`` / ``verified_by`` (a person never verifies their own item).

Models are anonymous on the page ("Model 1..N": the paper's "three anonymized MLLMs"); their names
stay server side and go to the dataset's ``model_results``. Model calls run on their own loop thread
(``ui.arena.context.AgentLoop``), image decoding, seeding and overlays in worker threads, and
uploaded masks are bounded by ``ui.imageguard`` like any untrusted image.
"""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Callable, Mapping

import anyio
import numpy as np
from fastapi import Depends, FastAPI, File, Form, Header, HTTPException, Request, UploadFile
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from pointlab.benchmark.pointbench.annotation import AnnotationError, AnnotationStore
from pointlab.benchmark.pointbench.masks import SegmenterError, mask_png, png_mask, seed_mask

from ..arena.battles import answer_record
from ..arena.context import AgentLoop
from ..imageguard import ImageLimits, ImageRejected, decode_image
from pointlab.ui.validation import install_validation_handler

__all__ = ["create_annotate_app", "STATIC_DIR"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
COMMON_STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
_IMAGE_LIMITS = ImageLimits(max_bytes=64 * 1024 * 1024, max_side_px=8192, max_pixels=8192 * 8192)
_MASK_LIMITS = ImageLimits(max_bytes=16 * 1024 * 1024, max_side_px=8192, max_pixels=8192 * 8192, formats=("PNG",))


def person(request: Request, authorization: Annotated[str | None, Header()] = None) -> str:
    """The caller's name from ``Authorization: Bearer <token>`` (401 otherwise: a bare token without
    the scheme too; the scheme is case-insensitive, RFC 7235 sec. 2.1)."""
    tokens = request.app.state.tokens
    scheme, _, tok = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or tok.strip() not in tokens:
        raise HTTPException(
            401, "annotator token required (Authorization: Bearer <token>)", headers={"WWW-Authenticate": "Bearer"}
        )
    return tokens[tok.strip()]


Who = Annotated[str, Depends(person)]


class AskIn(BaseModel):
    query: str


class SeedIn(BaseModel):
    """A click (pixels, finite; checked against the image's size by the route) and an optional box."""

    u: float = Field(allow_inf_nan=False)
    v: float = Field(allow_inf_nan=False)
    # (x0, y0, x1, y1): another length was a 500 (seed_mask unpacks four)
    box: list[int] | None = Field(None, min_length=4, max_length=4)


class VerdictIn(BaseModel):
    accept: bool
    reason: str = ""


def _load_rgb(path: str) -> np.ndarray:
    return decode_image(Path(path).read_bytes(), _IMAGE_LIMITS).rgb


def _overlay_png(image: str, masks: list[Path]) -> bytes:
    from PIL import Image

    rgb = _load_rgb(image).astype(np.float32)
    colours = np.array([[255, 0, 255], [0, 255, 255], [255, 255, 0], [0, 255, 0], [255, 128, 0]], np.float32)
    for k, p in enumerate(masks):
        with Image.open(p) as im:
            m = np.asarray(im.convert("L")) > 127
        rgb[m] = 0.4 * rgb[m] + 0.6 * colours[k % len(colours)]
    buf = io.BytesIO()
    Image.fromarray(rgb.astype(np.uint8)).save(buf, format="PNG", compress_level=3)
    return buf.getvalue()


def create_annotate_app(
    store: AnnotationStore,
    agents: Mapping[str, Any],
    tokens: Mapping[str, str],
    *,
    segmenter: str | Callable = "grabcut",
    agent_timeout_s: float = 60.0,
) -> FastAPI:
    """Build the annotation app.

    Args:
        store: the dataset's ``AnnotationStore`` (candidates already added).
        agents: ``{name: agent}`` in the order shown as Model 1..N (``async point(rgb, text)``).
        tokens: ``{token: person's name}``; at least two people are needed to verify.
        segmenter: ``"grabcut"``, ``"watershed"`` or a callable ``(rgb, (u, v), box) -> (H, W) bool``
            (e.g. ``benchmark.pointbench.masks.HttpSegmenter``).

    Raises: ValueError for an empty token map or a token shorter than 8 characters.
    """
    if not tokens or any(len(t) < 8 for t in tokens):
        raise ValueError("give every annotator a token of at least 8 characters")
    loop = AgentLoop()

    @asynccontextmanager
    async def lifespan(_app):
        yield
        loop.close(agents)

    app = FastAPI(title="Point-Bench annotation", lifespan=lifespan)
    install_validation_handler(app)
    app.state.tokens = dict(tokens)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="annotate-static")
    app.mount("/common", StaticFiles(directory=COMMON_STATIC_DIR), name="common-static")
    aliases = {f"Model {k + 1}": name for k, name in enumerate(agents)}

    for route, page in (("/", "annotate.html"), ("/verify", "verify.html")):

        def serve(page: str = page) -> FileResponse:
            return FileResponse(STATIC_DIR / page)

        app.add_api_route(route, serve, methods=["GET"], include_in_schema=False)

    def http(e: AnnotationError | SegmenterError | ImageRejected | ValueError) -> HTTPException:
        status = getattr(e, "status", 400)
        detail = getattr(e, "detail", None)
        return HTTPException(status, {"message": str(e), "model_results": detail} if detail else str(e))

    @app.get("/api/me")
    def me(who: Who) -> dict:
        return {"name": who, "models": list(aliases)}

    @app.get("/api/candidates")
    def candidates(who: Who) -> dict:
        return {
            "candidates": [
                {
                    "id": c["id"],
                    "source": c["source"],
                    "suggested_query": c["suggested_query"],
                    "image_url": f"/api/candidates/{c['id']}/image",
                }
                for c in store.candidates()
            ]
        }

    @app.get("/api/candidates/{cid}/image")
    def candidate_image(cid: str, who: Who) -> FileResponse:
        try:
            return FileResponse(store.candidate(cid)["image"])
        except AnnotationError as e:
            raise http(e) from None

    @app.post("/api/candidates/{cid}/ask")
    async def ask(cid: str, body: AskIn, who: Who) -> dict:
        """Send the query to every model at once; the page sees aliases and points only."""
        query = body.query.strip()
        if not query or len(query) > 500:
            raise HTTPException(400, "query must be 1..500 characters")
        try:
            cand = await anyio.to_thread.run_sync(store.candidate, cid)
            rgb = await anyio.to_thread.run_sync(_load_rgb, cand["image"])
        except (AnnotationError, ImageRejected, OSError) as e:
            raise http(e if not isinstance(e, OSError) else AnnotationError(str(e), 404)) from None

        async def one(alias: str, name: str) -> dict:
            try:
                rec = answer_record(await loop.run(agents[name].point(rgb, query), agent_timeout_s))
            except Exception as e:  # noqa: BLE001 - a failing model is a recorded failure
                rec = {"points_px": [], "parse_error": None, "error": f"{type(e).__name__}: {e}"}
            return {
                "alias": alias,
                "model": name,
                "points_px": rec["points_px"],
                "parse_error": rec.get("parse_error"),
                "error": rec.get("error"),
            }

        answers = list(await asyncio.gather(*(one(a, n) for a, n in aliases.items())))
        aid = await anyio.to_thread.run_sync(store.record_ask, cid, query, answers, who)
        return {
            "ask_id": aid,
            "answers": [
                {"alias": a["alias"], "points": a["points_px"], "failed": bool(a["error"]) or not a["points_px"]}
                for a in answers
            ],
        }

    @app.post("/api/candidates/{cid}/seed")
    async def seed(cid: str, body: SeedIn, who: Who) -> Response:
        """An initial mask from a click (and optional box): a PNG of the image's size, 255 = target."""
        try:
            cand = await anyio.to_thread.run_sync(store.candidate, cid)
            rgb = await anyio.to_thread.run_sync(_load_rgb, cand["image"])
            h, w = rgb.shape[:2]
            if not (0 <= body.u <= w - 1 and 0 <= body.v <= h - 1):
                raise AnnotationError(f"the click ({body.u}, {body.v}) is not on the {w}x{h} image", 400)
            box = (b[0], b[1], b[2], b[3]) if (b := body.box) else None
            if callable(segmenter):
                mask = await anyio.to_thread.run_sync(segmenter, rgb, (body.u, body.v), box)
            else:
                mask = await anyio.to_thread.run_sync(seed_mask, rgb, (body.u, body.v), box, segmenter)
        except (AnnotationError, SegmenterError, ImageRejected) as e:
            raise http(e) from None
        return Response(await anyio.to_thread.run_sync(mask_png, mask), media_type="image/png")

    @app.post("/api/candidates/{cid}/items")
    async def submit(
        cid: str,
        who: Who,
        ask_id: Annotated[str, Form()],
        category: Annotated[str, Form()],
        masks: Annotated[list[UploadFile], File()],
        keep_anyway: Annotated[bool, Form()] = False,
        reference: Annotated[str | None, Form()] = None,
    ) -> dict:
        """The drawn item: one PNG per target instance at the image's full size (value > 127 = target)."""
        try:
            cand = await anyio.to_thread.run_sync(store.candidate, cid)
            rgb = await anyio.to_thread.run_sync(_load_rgb, cand["image"])
            h, w = rgb.shape[:2]
            arrays = []
            for f in masks[:64]:
                data = await f.read(_MASK_LIMITS.max_bytes + 1)
                await anyio.to_thread.run_sync(decode_image, data, _MASK_LIMITS)  # bounded first
                arrays.append(await anyio.to_thread.run_sync(png_mask, data, w, h))
            refs = json.loads(reference) if reference else None
            return await anyio.to_thread.run_sync(
                lambda: store.submit(
                    cid=cid,
                    ask_id=ask_id,
                    category=category,
                    instance_masks=arrays,
                    drawn_by=who,
                    keep_anyway=keep_anyway,
                    reference_points_px=refs,
                )
            )
        except (AnnotationError, ImageRejected, ValueError) as e:
            raise http(e) from None

    @app.get("/api/items")
    def items(who: Who, status: str | None = "drawn") -> dict:
        out = []
        for it in store.items(status):
            out.append(
                {
                    k: it[k]
                    for k in (
                        "item_id",
                        "category",
                        "query",
                        "count",
                        "status",
                        "drawn_by",
                        "verified_by",
                        "filter_passed",
                        "source",
                        "reason",
                    )
                }
                | {
                    "mine": it["drawn_by"] == who,
                    "instances": len(it["instance_masks"]),
                    "models_correct": sum(r["correct"] for r in it["model_results"]),
                    "models": len(it["model_results"]),
                    "overlay_url": f"/api/items/{it['item_id']}/overlay.png",
                }
            )
        return {"items": out}

    @app.get("/api/items/{iid}/overlay.png")
    async def overlay(iid: str, who: Who) -> Response:
        try:
            it = await anyio.to_thread.run_sync(store.item, iid)
        except AnnotationError as e:
            raise http(e) from None
        png = await anyio.to_thread.run_sync(
            _overlay_png, it["image"], [store.mask_path(n) for n in it["instance_masks"]]
        )
        return Response(png, media_type="image/png")

    @app.post("/api/items/{iid}/verify")
    async def verify(iid: str, body: VerdictIn, who: Who) -> dict:
        try:
            it = await anyio.to_thread.run_sync(store.verify, iid, who, body.accept, body.reason)
        except (AnnotationError, ValueError) as e:
            raise http(e) from None
        return {k: it[k] for k in ("item_id", "status", "drawn_by", "verified_by", "reason")}

    return app
