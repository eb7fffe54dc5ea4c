"""The FastAPI app factory of Point-Act's browser side (issue 2, "Trials in the browser").

``create_app(parts, store, operator_token=...)`` wires the routes (grouped by resource in
``routes_*.py``), the websockets (``ws.py``) and the static pages; nothing is read from the
environment or at import time. Serve it with uvicorn on 127.0.0.1 (see docs/web.md).
"""

from __future__ import annotations

import importlib.resources

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from pointlab.bridge.study.store import Store
from pointlab.bridge.trials.station import PointActParts

from . import routes_arm, routes_pages, routes_participant, routes_results, routes_scene, routes_studies, ws
from .context import AppContext, UiSettings
from .validation import install_validation_handler

__all__ = ["create_app", "UiSettings"]


def create_app(
    parts: PointActParts, store: Store, *, operator_token: str, settings: UiSettings | None = None
) -> FastAPI:
    """Build the app.

    Args:
        parts: the running system (:class:`pointlab.bridge.trials.station.PointActParts`; ``Session.parts``).
        store: the study database.
        operator_token: the secret of the operator console (>= 8 characters).
        settings: frame rate, message limits, public URL for invite links (defaults: ``UiSettings()``).

    Raises:
        ValueError: a short operator token or invalid settings.
    """
    app = FastAPI(title="Point-Act", docs_url=None, redoc_url=None, openapi_url=None)
    # No /docs or /openapi.json: the schema lists operator routes a participant has no use for.
    app.state.ctx = AppContext(parts, store, operator_token, settings or UiSettings())
    for r in (routes_pages, routes_studies, routes_arm, routes_scene, routes_results, routes_participant, ws):
        app.include_router(r.router)
    install_validation_handler(app)
    app.mount("/static", StaticFiles(directory=str(importlib.resources.files("pointlab.ui") / "static")), name="static")
    return app
