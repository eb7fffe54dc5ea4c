"""The base of every error the benchmark package raises on purpose (``BenchmarkError``, a
``PointlabError``). Each error keeps the built-in class callers already caught it as
(``AgentsConfigError`` is still a ``ValueError``)."""

from __future__ import annotations

from pointlab.perception.errors import PointlabError

__all__ = ["BenchmarkError"]


class BenchmarkError(PointlabError):
    """Base class of the benchmark package's errors (model layer, scorers, records, datasets)."""
