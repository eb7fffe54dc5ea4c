"""Point-Bench authoring in the browser (PointArena sec. 3.2): query, three anonymous models, the
filter, seeded masks refined by hand, verification by a second person. See docs/pointbench.md."""

from .app import create_annotate_app

__all__ = ["create_annotate_app"]
