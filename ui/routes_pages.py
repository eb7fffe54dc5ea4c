"""HTML pages: participant (invite link), operator console, results. The pages are static files;
their data comes from the JSON API and the websockets with the caller's token."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from .deps import Ctx

__all__ = ["router", "static_page"]

router = APIRouter()


def static_page(name: str) -> str:
    """A page of ``ui/static`` as text (the apps serve the same files)."""
    return resources.files("pointlab.ui").joinpath("static", name).read_text(encoding="utf-8")


@router.get("/", response_class=HTMLResponse)
def index() -> str:
    return static_page("index.html")


@router.get("/p/{token}", response_class=HTMLResponse)
def participantstatic_page(token: str, ctx: Ctx) -> HTMLResponse:
    """The participant page of invite ``token`` (404 for an unknown token, with no details)."""
    if ctx.store.participant_by_token(token) is None:
        return HTMLResponse(static_page("invalid.html"), status_code=404)
    return HTMLResponse(static_page("participant.html"))


@router.get("/operator", response_class=HTMLResponse)
def operatorstatic_page() -> str:
    """The operator console; the token travels in the URL fragment (``/operator#token=...``)."""
    return static_page("operator.html")


@router.get("/results", response_class=HTMLResponse)
def resultsstatic_page() -> str:
    """The results page (operator token in the URL fragment)."""
    return static_page("results.html")
