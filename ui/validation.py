"""The 422 of every pointlab web app (act, the study server, the arena, annotation).

FastAPI's default echoes the offending input back as UTF-8: an input holding a lone surrogate (valid
JSON ``"\\ud800"``) cannot be encoded and the 422 became a 500, and a 5,000-character instruction came
back whole. Here the body is rendered with ASCII escapes and each echoed ``input`` is cut to 200
characters."""

from __future__ import annotations

import json

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

__all__ = ["install_validation_handler", "ECHO_CHARS"]

ECHO_CHARS = 200


def _short(value):
    text = value if isinstance(value, str) else json.dumps(jsonable_encoder(value), ensure_ascii=True, default=str)
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "..."


async def _validation_error(_request: Request, exc: RequestValidationError) -> Response:
    errors = [{**e, "input": _short(e["input"])} if "input" in e else e for e in exc.errors()]
    body = json.dumps({"detail": jsonable_encoder(errors)}, ensure_ascii=True, default=str)
    return Response(body, status_code=422, media_type="application/json")


def install_validation_handler(app: FastAPI) -> None:
    """Answer ``app``'s request validation errors as described in the module docstring."""
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]  # Starlette types a handler as taking any Exception
