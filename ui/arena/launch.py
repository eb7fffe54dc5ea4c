"""Building a served arena from a plain config, in one process or in each of ``uvicorn --workers N``.

``ArenaConfig`` holds what ``pointlab bench arena`` decides (store URL, agents file, the running
sim model server's URL, curated images, Point-Bench items, settings, admin token). One process:
``build_app(cfg)``. Several workers: the parent writes the config as JSON, points
``POINTLAB_ARENA_CONFIG`` at it and runs ``uvicorn pointlab.ui.arena.asgi:app_from_env --factory
--workers N``; each worker builds the same app from the file. The store must then be one that
several processes share (PostgreSQL; SQLite works but serialises every write).

Start-up is kept short (issue 14, #9: serving again within 5 s of a crash): nothing here renders,
downloads or scans; the sim model server and the demo images are made by the parent before the
workers start, and a SQLite store recovers its WAL on first open (small, since SQLite checkpoints
every 1000 pages).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .context import ArenaSettings

__all__ = ["ArenaConfig", "build_app", "load_curated", "DEFAULT_ARENA_AGENTS", "CONFIG_ENV"]

CONFIG_ENV = "POINTLAB_ARENA_CONFIG"
DEFAULT_ARENA_AGENTS = Path(__file__).resolve().parent / "default_arena_agents.toml"


@dataclass
class ArenaConfig:
    """Everything a worker needs to build the arena app (JSON-serialisable).

    Attributes:
        db: SQLAlchemy URL or SQLite path.
        agents: agents TOML path (``None``: ``default_arena_agents.toml``).
        sim_url: base URL of the running sim model server, for ``base_url = "sim"`` agents.
        images, masks, mask_names: curated folder, optional masks folder and the target's names.
        demo_dir: where the demo set lives when ``images`` is ``None``.
        data: Point-Bench dataset for the human baseline page.
        uploads_dir: where uploads are written.
        settings: ``ArenaSettings`` fields.
        admin_token: bearer token of the admin routes.
        pool_size: database connections per worker.
    """

    db: str
    agents: str | None = None
    sim_url: str | None = None
    images: str | None = None
    masks: str | None = None
    mask_names: list[str] = field(default_factory=lambda: ["hand"])
    demo_dir: str | None = None
    data: str | None = None
    uploads_dir: str | None = None
    settings: dict = field(default_factory=dict)
    admin_token: str | None = None
    pool_size: int = 10

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ArenaConfig":
        return cls(**json.loads(text))


#: CPython's collector thresholds for a serving arena process (the default is (700, 10, 10))
SERVING_GC_THRESHOLD = (20_000, 50, 50)


def tune_gc_for_serving() -> None:
    """Call once the app is built, before serving: move every object alive now (imports, the app,
    the curated set) out of the collector's reach (``gc.freeze``, Python's documented use; Instagram,
    "Dismissing Python Garbage Collection at Instagram", 2017) and collect young objects every 20,000 allocations instead of 700. A request
    allocates thousands of short-lived objects; with the defaults the collector ran several times per
    vote and each full collection walked the whole start-up heap. Measured with ``pointlab perf
    arena`` (docs/arena.md, "Performance"): about a tenth less CPU per vote and a shorter tail. Memory
    held by reference cycles is freed later, not never."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVING_GC_THRESHOLD)


def load_curated(cfg: ArenaConfig):
    """The curated set of ``cfg`` (rendering the demo set on first use). Raises: CuratedSetError."""
    from .curated import CuratedSet

    if cfg.images:
        return CuratedSet.from_folder(cfg.images, masks=cfg.masks, names=tuple(cfg.mask_names))
    return CuratedSet.demo(cfg.demo_dir or "arena_demo")


def build_app(cfg: ArenaConfig, curated: Any = None):
    """The arena app of ``cfg``. Raises: AgentsConfigError, DatasetError, CuratedSetError, ValueError, ArenaError."""
    from pointlab.benchmark.agents_config import load_agents

    from .app import create_arena_app
    from .store import ArenaStore

    items = []
    if cfg.data:
        from pointlab.benchmark.pointbench import load_dataset

        items = load_dataset(cfg.data)
    agents = {
        n: a
        for n, a in load_agents(cfg.agents or DEFAULT_ARENA_AGENTS, sim_base_url=cfg.sim_url).items()
        if hasattr(a, "point_format")
    }  # model agents only (no human agent in the arena)
    settings = ArenaSettings(
        **{**cfg.settings, **{k: tuple(v) for k, v in cfg.settings.items() if isinstance(v, list)}}
    )
    return create_arena_app(
        agents,
        db_path=cfg.db,
        store=ArenaStore(cfg.db, pool_size=cfg.pool_size),
        curated=curated if curated is not None else load_curated(cfg),
        uploads_dir=cfg.uploads_dir,
        settings=settings,
        bench_items=items,
        admin_token=cfg.admin_token,
    )
