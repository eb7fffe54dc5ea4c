"""The Point-Battle app factory (PointArena sec. 3.3) with the leaderboard and the human baseline page.

``create_arena_app(agents, db_path=...)`` returns a FastAPI app serving:
``/`` the battle page, ``/leaderboard`` the ratings page, ``/human`` the human-baseline clicking page,
``/human/summary`` its per-category summary, and the JSON API under ``/api`` (``battles``,
``leaderboard``, ``human`` routers). The pages share the Point-Act pages' stylesheet
(``/common/style.css``). Nothing is read from the environment; several apps can run side by side.
"""

from __future__ import annotations

import random
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Mapping, Sequence

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from . import battles, human, leaderboard
from .context import AgentLoop, ArenaContext, ArenaSettings
from .curated import CuratedSet
from .store import ArenaStore, StoreUnavailable
from pointlab.ui.validation import install_validation_handler

__all__ = ["create_arena_app", "STATIC_DIR", "COMMON_STATIC_DIR"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
COMMON_STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
_PAGES = (
    ("/", "arena.html"),
    ("/leaderboard", "leaderboard.html"),
    ("/human", "human.html"),
    ("/human/summary", "human_summary.html"),
)


class ContentLengthLimit:
    """ASGI middleware: a POST whose ``Content-Length`` is above ``limit`` bytes gets 413 before its
    body is read. Plain ASGI, not ``@app.middleware("http")``: Starlette's BaseHTTPMiddleware wraps
    every response in a stream and a task group, a measurable share of a worker's time under load
    (``pointlab perf arena``, docs/arena.md)."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, int(limit)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            for name, value in scope["headers"]:
                if name == b"content-length":
                    n = value.decode("latin-1")
                    if n.isdigit() and int(n) > self.limit:
                        response = JSONResponse(
                            {"detail": f"request body is {n} bytes, limit {self.limit}"}, status_code=413
                        )
                        await response(scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)


def create_arena_app(
    agents: Mapping[str, Any],
    *,
    db_path: str | Path = ":memory:",
    curated_dir: str | Path | None = None,
    curated: CuratedSet | None = None,
    uploads_dir: str | Path | None = None,
    settings: ArenaSettings | None = None,
    bench_items: Sequence = (),
    admin_token: str | None = None,
    store: ArenaStore | None = None,
) -> FastAPI:
    """Build the arena app.

    Args:
        agents: ``{model name: agent}``; an agent has ``async point(image_rgb, instruction)`` returning
            an ``AgentAnswer`` (``pointlab.benchmark.agents``). At least two.
        db_path: the store: a SQLAlchemy URL (``postgresql+psycopg://...``), a SQLite file path or
            ``":memory:"`` (ignored when ``store`` is given).
        curated_dir: folder of curated images offered on the page (its ``arena_images.json``
            manifest when present); or ``curated``: a ``CuratedSet`` (images with target masks).
        uploads_dir: where accepted uploads are stored (default: next to a SQLite file, else
            ``./uploads``).
        settings: ``ArenaSettings`` (sampler, limits, Elo parameters).
        bench_items: Point-Bench items for the human baseline page.
        admin_token: bearer token of the admin routes (excluding human-baseline sessions); none: off.

    Raises: ValueError for fewer than two agents; ArenaError when the store cannot be opened.
    """
    if len(agents) < 2:
        raise ValueError("the arena needs at least two agents")
    settings = settings or ArenaSettings()
    store = store or ArenaStore(db_path)
    if uploads_dir is None:
        local = "://" not in str(db_path) and str(db_path) != ":memory:"
        uploads_dir = (Path(db_path).parent if local else Path.cwd()) / "uploads"
    if curated is None:
        curated = CuratedSet.from_folder(curated_dir) if curated_dir else CuratedSet()
    ctx = ArenaContext(
        store=store,
        agents=dict(agents),
        settings=settings,
        curated=curated,
        uploads_dir=Path(uploads_dir),
        bench_items=list(bench_items),
        rng=random.Random(settings.seed),
        agent_loop=(agent_loop := AgentLoop()),
        admin_token=admin_token,
    )

    @asynccontextmanager
    async def lifespan(_app):
        yield
        agent_loop.close(ctx.agents)
        ctx.db_pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title="Point-Battle", lifespan=lifespan)
    install_validation_handler(app)
    app.state.arena = ctx
    app.include_router(battles.router)
    app.include_router(leaderboard.router)
    app.include_router(human.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="arena-static")
    app.mount("/common", StaticFiles(directory=COMMON_STATIC_DIR), name="common-static")

    @app.exception_handler(StoreUnavailable)
    async def store_unavailable(_request, exc: StoreUnavailable) -> JSONResponse:
        # from any route or dependency (the session cookie is checked against the store first)
        return JSONResponse(
            {"detail": str(exc), "retry_after_s": exc.retry_after_s},
            status_code=503,
            headers={"Retry-After": str(exc.retry_after_s)},
        )

    # refuse an oversized body before it is parsed and spooled (the decoder's byte limit is the exact
    # check; this one only stops a huge body from being read at all)
    app.add_middleware(ContentLengthLimit, limit=settings.max_upload_bytes + 64 * 1024)

    for route, page in _PAGES:

        def serve(page: str = page) -> FileResponse:
            return FileResponse(STATIC_DIR / page)

        app.add_api_route(route, serve, methods=["GET"], include_in_schema=False)

    if settings.trusted_proxies:
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(settings.trusted_proxies))
    return app
