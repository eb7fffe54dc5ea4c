"""Point-Battle runtime state: settings, the store, the agents, answers in flight."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .store import ArenaStore

__all__ = ["ArenaSettings", "ArenaContext"]


@dataclass(frozen=True)
class ArenaSettings:
    """Settings of one arena app (passed to ``create_arena_app``; nothing read from the environment).

    Attributes:
        sampler: pair sampling, ``uniform`` (PointArena) or ``adaptive`` (see ``sampling``).
        max_upload_bytes: largest accepted upload.
        max_image_side_px: largest accepted width or height.
        upload_formats: PIL format names accepted for uploads.
        max_instruction_chars: longest instruction accepted.
        max_battles_per_minute: per-session rate limit on new battles.
        flag_min_votes: a session is flagged once at least this many votes all chose the same side.
        include_flagged: count flagged sessions' votes on the leaderboard.
        agent_timeout_s: a model answer slower than this becomes a failed answer.
        elo_start, elo_k, elo_base, elo_scale: online Elo parameters (PointArena: 1000, 2, 10, 400).
        bootstrap_rounds: bootstrap rounds for the leaderboard's intervals.
        seed: seed of the pair sampler (``None``: nondeterministic).
    """

    sampler: str = "uniform"
    max_upload_bytes: int = 8 * 1024 * 1024
    max_image_side_px: int = 4096
    upload_formats: tuple[str, ...] = ("PNG", "JPEG", "WEBP")
    max_instruction_chars: int = 500
    max_battles_per_minute: int = 20
    flag_min_votes: int = 10
    include_flagged: bool = False
    agent_timeout_s: float = 60.0
    elo_start: float = 1000.0
    elo_k: float = 2.0
    elo_base: float = 10.0
    elo_scale: float = 400.0
    bootstrap_rounds: int = 100
    seed: int | None = None

    def __post_init__(self) -> None:
        from .sampling import SAMPLERS

        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {self.sampler!r}")
        if self.max_upload_bytes < 1024 or self.max_image_side_px < 16:
            raise ValueError("max_upload_bytes must be >= 1024 and max_image_side_px >= 16")
        if self.max_battles_per_minute < 1 or self.flag_min_votes < 2 or not self.agent_timeout_s > 0:
            raise ValueError("max_battles_per_minute >= 1, flag_min_votes >= 2, agent_timeout_s > 0 required")


@dataclass
class ArenaContext:
    """Everything routes share (``app.state.arena``). Used from the event loop only."""

    store: ArenaStore
    agents: Mapping[str, Any]
    settings: ArenaSettings
    curated_dir: Path | None
    uploads_dir: Path
    bench_items: list = field(default_factory=list)  # Point-Bench items for the human baseline page
    rng: random.Random = field(default_factory=random.Random)
    pending: dict[str, dict[str, asyncio.Task]] = field(default_factory=dict)

    def curated_images(self) -> dict[str, Path]:
        """``{file name: path}`` of the curated images (png/jpg/jpeg/webp, sorted)."""
        if self.curated_dir is None or not self.curated_dir.is_dir():
            return {}
        return {p.name: p for p in sorted(self.curated_dir.iterdir())
                if p.suffix.lower() in (".png", ".jpg", ".jpeg", ".webp") and p.is_file()}
