"""Point-Battle (PointArena sec. 3.3): a blind pairwise arena, its SQLite store, pair sampling, the
leaderboard page and the Point-Bench human-baseline clicking page."""

from .app import create_arena_app
from .context import ArenaSettings
from .store import VOTE_CHOICES, ArenaError, ArenaStore

__all__ = ["create_arena_app", "ArenaSettings", "ArenaStore", "ArenaError", "VOTE_CHOICES"]
