"""The study server's web app (``pointlab act server``): operator console and participant API over stations.

A participant's browser talks to this server only, never to a station (docs/stations.md, "Security");
everything a participant gets is blinded by ``ui.flow.blinded_trial`` (alias, first point, fixed
messages). Routes (JSON unless said):

- ``GET /stations`` (HTML) and ``GET /api/console``: every station (idle, resetting, in trial,
  offline), the waiting line, record counts. ``POST /api/console/estop``: the e-stop of every station;
  ``POST /api/console/stations/{name}/{reset|home|abort|estop}``: one station's.
- ``POST /api/studies``: a study and its participants' invite tokens (operator).
- ``GET /api/p/{token}``: the participant's step, its station's place in line, a pending trial.
- ``POST /api/p/{token}/block``, ``/trial`` ``{"instruction"}``, ``/judge`` ``{"trial_id", "judgement"}``,
  ``/sus`` ``{"block", "responses"}``; ``GET /api/p/{token}/frame`` (JPEG: its station's live view).
  A pairwise study (``"mode": "pairwise"``): ``/episode`` ``{"instruction"}`` runs both halves on the
  participant's station and returns the blinded episode; ``/compare`` ``{"episode_id", "preference",
  "progress_a", "progress_b", "reason"}`` (``ui.pairwise_flow``).

Operator routes take the token as ``Authorization: Bearer TOKEN``. A request that cannot be served now
is 409 with ``{"detail"}`` a participant may read; a bad body is 422.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from pointlab.bridge.stations.server import ServerBusy, StudyServer
from pointlab.bridge.study.design import DESIGN, alias, invite_participant
from pointlab.bridge.study.store import StoreError
from pointlab.bridge.study.sus import SUS_ITEMS, SusError

from .deps import StorableStr
from .routes_pages import static_page
from .routes_participant import own_trial_frame
from .flow import blinded_trial
from .pairwise_flow import blinded_episode, pairwise_state
from pointlab.ui.validation import install_validation_handler

__all__ = ["create_server_app"]

STATIC = Path(__file__).parent / "static"
CONSOLE_VERBS = ("reset", "home", "abort", "estop")


class StudyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # texts the store must be able to keep (no lone surrogate, no NUL: ui.deps.StorableStr), as act's
    agents: list[Annotated[StorableStr, Field(min_length=1, max_length=200)]] = Field(min_length=1)
    trials_per_agent: int = Field(ge=1, le=100, strict=True)
    scene: Annotated[StorableStr, Field(max_length=200)] = "tabletop"
    participants: int = Field(default=1, ge=1, le=1000, strict=True)
    max_repeats: int = Field(default=2, ge=0, le=20, strict=True)
    reveal_low_s: float = Field(default=10.0, ge=0, le=300, allow_inf_nan=False)
    reveal_high_s: float = Field(default=26.0, ge=0, le=300, allow_inf_nan=False)
    mode: Literal["absolute", "pairwise"] = "absolute"
    pair_sampling: Literal["uniform", "adaptive"] = "uniform"


class CompareIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    episode_id: int
    preference: str
    progress_a: int = Field(strict=True)
    progress_b: int = Field(strict=True)
    reason: Annotated[StorableStr, Field(max_length=1000)] = ""


class TrialIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instruction: Annotated[StorableStr, Field(min_length=1, max_length=500)]


class JudgeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trial_id: int
    judgement: str


class ClickIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    u: float = Field(allow_inf_nan=False)
    v: float = Field(allow_inf_nan=False)


class SusIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    block: int
    responses: list[Any]


def _operator(request: Request, authorization: Annotated[str | None, Header()] = None) -> None:
    given = (authorization or "").removeprefix("Bearer ").strip()
    if not secrets.compare_digest(given.encode(), request.app.state.operator_token.encode()):
        raise HTTPException(401, "operator token required (Authorization: Bearer TOKEN)")


def _participant(token: str, request: Request) -> dict:
    p = request.app.state.server.store.participant_by_token(token)
    if p is None:
        raise HTTPException(404, "unknown invitation")
    return p


Op = Annotated[None, Depends(_operator)]
P = Annotated[dict, Depends(_participant)]


def create_server_app(server: StudyServer, *, operator_token: str) -> FastAPI:
    """The app of ``server`` (module docstring). ``operator_token``: at least 8 characters.

    Raises:
        ValueError: the token is too short.
    """
    if len(operator_token) < 8:
        raise ValueError("operator_token must be at least 8 characters")
    store = server.store

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        server.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            server.close()

    app = FastAPI(title="pointlab study server", lifespan=lifespan)
    install_validation_handler(app)
    app.state.server, app.state.operator_token = server, operator_token
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    @app.get("/stations", response_class=HTMLResponse)
    def console_page() -> str:
        return static_page("stations.html")

    @app.get("/stations.js")
    def console_js() -> Response:
        return Response((STATIC / "stations.js").read_bytes(), media_type="text/javascript")

    @app.get("/api/console")
    def console(_: Op) -> dict:
        return server.console()

    @app.post("/api/console/estop")
    async def estop(_: Op) -> dict:
        return {"stopped": await server.estop_all()}

    @app.post("/api/console/stations/{name}/{verb}")
    async def station_command(name: str, verb: str, _: Op) -> dict:
        """One station's ``reset`` (leave the e-stop), ``home`` (allows trials again after a reset),
        ``abort`` (the running trial), ``estop``, or ``release`` (its participant left mid-block: the
        station is free for the next in line): the console's per-station buttons."""
        if verb not in (*CONSOLE_VERBS, "release"):
            raise HTTPException(422, f"verb must be one of {[*CONSOLE_VERBS, 'release']}")
        if name not in server.dispatch.stations:
            raise HTTPException(404, f"no station {name!r}")
        if verb == "release":  # the server's own bookkeeping: the participant holding it left
            return {"ok": True, "released_participant": server.release_station(name)}
        return await server.command(name, verb, timeout_s=60.0)

    @app.get("/api/console/human")
    async def human_requests(_: Op) -> list[dict]:
        """The human reference's open requests at every station (image as ``jpeg_b64``)."""
        return await server.human_requests()

    @app.post("/api/console/human/{name}/{request_id}/{verb}")
    async def human_reply(name: str, request_id: str, verb: str, _: Op, body: ClickIn | None = None) -> dict:
        """The operator's click (``answer``, ``{"u", "v"}`` in the request image's pixels) or ``decline``
        for request ``request_id`` at station ``name``: 404 unknown station or request, 422 a point
        outside the image (the station checks it, as ``pointlab act`` does)."""
        if verb not in ("answer", "decline"):
            raise HTTPException(422, "verb must be answer or decline")
        if name not in server.dispatch.stations:
            raise HTTPException(404, f"no station {name!r}")
        if verb == "answer" and body is None:
            raise HTTPException(422, 'an answer needs {"u", "v"}')
        payload = {"request_id": request_id, **({"u": body.u, "v": body.v} if body is not None else {})}
        reply = await server.command(name, f"human_{verb}", payload, timeout_s=10.0)
        if not reply.get("ok"):
            error = str(reply.get("error") or f"station {name} did not take it")
            raise HTTPException(422 if reply.get("invalid") else 404, error)
        return {"ok": True, "station": name, "request_id": request_id}

    @app.get("/api/studies")
    def list_studies(_: Op) -> list[dict]:
        """Every study with its participants' invitation tokens and labels (the console lists them, so
        a reload of the console loses no link)."""
        out = []
        for st in store.studies():
            people = [
                {"label": p.get("label"), "token": p.get("token"), "id": p["id"]} for p in store.participants(st["id"])
            ]
            out.append(
                {"study_id": st["id"], "agents": st.get("agents"), "scene": st.get("scene"), "participants": people}
            )
        return out

    @app.post("/api/studies", status_code=201)
    def create_study(body: StudyIn, _: Op) -> dict:
        if body.reveal_low_s > body.reveal_high_s:
            raise HTTPException(422, "reveal_low_s is above reveal_high_s")
        offers = server.offers()
        if offers:  # (with no station known yet nothing can be checked: they may join later)
            fit = [o for o in offers if o.get("scene") == body.scene]
            if not fit:
                raise HTTPException(
                    422,
                    f"no station offers scene {body.scene!r}; offered: {sorted({str(o.get('scene')) for o in offers})}",
                )
            if not any(set(body.agents) <= set(o.get("agents", ())) for o in fit):
                known = sorted({a for o in fit for a in o.get("agents", ())})
                raise HTTPException(
                    422, f"no station of scene {body.scene!r} runs all of {body.agents}; they run {known}"
                )
        try:
            sid = store.create_study(
                agents=body.agents,
                trials_per_agent=body.trials_per_agent,
                scene=body.scene,
                design=DESIGN,
                max_repeats=body.max_repeats,
                reveal_low_s=body.reveal_low_s,
                reveal_high_s=body.reveal_high_s,
                mode=body.mode,
                pair_sampling=body.pair_sampling,
            )
        except StoreError as e:  # e.g. a pairwise study of one agent
            raise HTTPException(422, str(e)) from e
        tokens = [invite_participant(store, sid, label=f"P{i + 1}")[1] for i in range(body.participants)]
        return {"study_id": sid, "tokens": tokens}

    @app.get("/p/{token}", response_class=HTMLResponse)
    def participant_page(token: str) -> HTMLResponse:
        """The participant page of ``pointlab act`` (``static/participant.html``), talking to this
        server's JSON API (``static/participant_http.js``) instead of a websocket."""
        if store.participant_by_token(token) is None:
            return HTMLResponse(static_page("invalid.html"), status_code=404)
        page = static_page("participant.html")
        return HTMLResponse(page.replace("<body>", '<body data-transport="http">', 1))

    @app.get("/api/p/{token}")
    def state(p: P) -> dict:
        """The participant's state in the shape of the single-process page's ``state`` message
        (``ui.flow.participant_state``), for the station the participant holds."""
        step = server.step(p)
        name = server.dispatch.station_of(p["id"])
        status = server.status.get(name, {}) if name else {}
        view = server.dispatch.stations.get(name) if name else None
        line = server.dispatch.position(p["id"])
        out: dict[str, Any] = {
            "type": "state",
            "label": p["label"],
            "step": step.to_dict(),
            "has_station": name is not None,
            "queue_position": line,
            "queue_length": len(server.dispatch.waiting),
            "action": server.next_action(p, step.block),
            "arm_busy": view is not None and view.status in ("in_trial", "resetting"),
            "stopped": bool(status.get("stopped")),
            "not_ready": bool(status.get("needs_reset")) and not status.get("stopped"),
            "pending_trial": None,
        }
        if step.kind == "judge" and step.trial_id is not None:
            out["pending_trial"] = blinded_trial(store.trial(step.trial_id))
        if step.kind == "sus":
            out["sus_items"] = list(SUS_ITEMS)
        if server.mode(p) == "pairwise":
            out.update(pairwise_state(store, step))
        return out

    @app.get("/api/p/{token}/trials/{trial_id}/frame")
    def trial_frame(trial_id: int, p: P, which: Literal["before", "after"] = "before") -> Response:
        """The frame the agent saw (``before``) or the frame after the arm stopped (``after``) of one
        of the caller's own trials, as the station delivered them with the record. 404 for anything
        else (one message, so other participants' trial ids are not revealed)."""
        return own_trial_frame(store, trial_id, p["id"], which, store.trial_frame)

    @app.post("/api/p/{token}/block")
    async def block(p: P) -> dict:
        try:
            return await server.start_block(p)
        except ServerBusy as e:
            raise HTTPException(409, str(e)) from e

    @app.post("/api/p/{token}/trial")
    async def trial(body: TrialIn, p: P) -> dict:
        text = " ".join(body.instruction.split())
        try:
            row_id = await server.run_trial(p, text)
        except ServerBusy as e:
            raise HTTPException(409, str(e)) from e
        row = store.trial(row_id)
        again = row.get("outcome") == "aborted" and server.step(p).repeat
        return blinded_trial(row, offered_again=again)

    @app.post("/api/p/{token}/episode")
    async def episode(body: TrialIn, p: P) -> dict:
        text = " ".join(body.instruction.split())
        try:
            episode_id = await server.run_episode(p, text)
        except ServerBusy as e:
            raise HTTPException(409, str(e)) from e
        return blinded_episode(store, store.episode(episode_id), offered_again=server.step(p).repeat)

    @app.post("/api/p/{token}/compare")
    def compare(body: CompareIn, p: P) -> dict:
        try:
            server.compare(p, body)
        except ServerBusy as e:
            raise HTTPException(409, str(e)) from e
        return {"type": "compared", "episode_id": body.episode_id}

    @app.post("/api/p/{token}/judge")
    def judge(body: JudgeIn, p: P) -> dict:
        try:
            server.judge(p, body.trial_id, body.judgement)
        except ValueError as e:
            raise HTTPException(422, str(e)) from e
        except ServerBusy as e:
            raise HTTPException(409, str(e)) from e
        return {"type": "judged", "trial_id": body.trial_id, "judgement": body.judgement}

    @app.post("/api/p/{token}/sus")
    def sus(body: SusIn, p: P) -> dict:
        try:
            server.submit_sus(p, body.block, body.responses)
        except SusError as e:
            raise HTTPException(422, f"questionnaire: {e}") from e
        except ServerBusy as e:
            raise HTTPException(409, str(e)) from e
        return {"type": "sus_saved", "block": body.block, "alias": alias(body.block)}

    @app.get("/api/p/{token}/frame")
    def frame(p: P) -> Response:
        name = server.dispatch.station_of(p["id"])
        got = server.live.get(name) if name else None
        if got is None:
            raise HTTPException(404, "no station frame yet")
        return Response(got[0], media_type="image/jpeg", headers={"Cache-Control": "no-store"})

    return app
