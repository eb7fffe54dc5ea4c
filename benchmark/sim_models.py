"""The local model server behind agents whose config says ``base_url = "sim"``.

A test double (it lives in ``sim_mock``) reached only through this registry: an implementation
registers a factory under the ``pointlab.sim_model_servers`` entry-point group in ``pyproject.toml``,
by the source its models answer from:

- ``dataset``: ``factory(items)``, models that point inside each Point-Bench item's own mask;
- ``scene``: ``factory(world=None)``, models that point at the objects of a sim scene (a new default
  scene when ``world`` is ``None``);
- ``qa``: ``factory(records)``, models that answer video / QA questions from their answer key.

Each factory starts an OpenAI-compatible server on 127.0.0.1 and returns ``(base_url, stop)``;
``base_url`` ends in ``/v1`` and goes to ``agents_config.load_agents(..., sim_base_url=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from pointlab.benchmark.errors import BenchmarkError

__all__ = ["ENTRY_POINT_GROUP", "SimModelsUnavailable", "serve_sim_models", "sim_server_for"]

ENTRY_POINT_GROUP = "pointlab.sim_model_servers"


class SimModelsUnavailable(BenchmarkError, RuntimeError):
    """No sim model server is registered for that source (the package is installed without sim_mock)."""


def serve_sim_models(source: str, *args: Any, **kwargs: Any) -> tuple[str, Callable[[], None]]:
    """Start the sim model server registered for ``source`` (``dataset`` or ``scene``).

    Returns:
        ``(base_url, stop)``: the server's ``http://127.0.0.1:PORT/v1`` and a function that stops it.

    Raises:
        SimModelsUnavailable: nothing is registered under ``source``.
    """
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == source:
            return ep.load()(*args, **kwargs)
    raise SimModelsUnavailable(f"no sim model server registered for {source!r} (group {ENTRY_POINT_GROUP})")


def sim_server_for(cfg: Any, source: str, *args: Any) -> tuple[str | None, Callable[[], None] | None]:
    """``serve_sim_models(source, *args)`` when agent config ``cfg`` says ``base_url = "sim"``, else
    ``(None, None)`` (a real endpoint needs no server here).

    Raises: SimModelsUnavailable (as ``serve_sim_models``).
    """
    from .agents_config import SIM_BASE_URL

    if getattr(cfg, "base_url", None) != SIM_BASE_URL:
        return None, None
    return serve_sim_models(source, *args)
