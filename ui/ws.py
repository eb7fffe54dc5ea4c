"""Websockets: the participant's live view + commands, the operator's live view + status.

``/ws/participant?token=INVITE`` (participant):
    server -> client: binary messages are JPEG frames of the live colour view (``live_view.latest_jpeg()``,
    each new frame pushed as soon as the camera sends it, at most ``UiSettings.frame_rate_hz`` a second); text messages are JSON with
    ``type`` in ``state``, ``trial_started``, ``trial_result``, ``judged``, ``sus_saved``, ``pong``, ``error``.
    client -> server (JSON text): ``{"type": "instruction", "text"}``, ``{"type": "judge", "trial_id",
    "judgement"}``, ``{"type": "sus", "block", "responses": [10 ints]}``, ``{"type": "ping"}``; in a
    pairwise study ``{"type": "compare", "episode_id", "preference": "A"|"B"|"tie", "progress_a",
    "progress_b": 0-100, "reason"}``, and an instruction runs both halves (``trial_started`` with
    ``alias`` ``A`` then ``B``, then ``episode_result``: ``ui.pairwise_flow``).
``/ws/operator?token=OPERATOR``:
    server -> client: JPEG frames and ``status`` JSON (queue, current trial with the agent's name,
    open human-reference requests without their image, e-stop flag, arm state) every
    ``status_interval_s``. Client messages: only ``ping``.

A bad message (binary, oversized, not JSON, unknown type, wrong fields, wrong token at connect)
gets ``{"type": "error", "error": reason}`` back; the connection stays open (except for a wrong
token, which is then closed with code 4401) and nothing reaches the robot.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from starlette.websockets import WebSocketState

from pointlab.benchmark.records import dumps_json, finite_json

from .context import AppContext, CurrentTrial
from . import pairwise_flow
from .deps import resolve_token
from .flow import (
    FlowError,
    check_can_start,
    claim_arm,
    judge_trial,
    participant_state,
    participant_step,
    prepare_block,
    release_arm,
    request_block_start,
    run_participant_trial,
    submit_sus,
)
from pointlab.ui.errors import UiError

__all__ = ["router", "parse_client_message", "ClientMessageError"]

log = logging.getLogger(__name__)
router = APIRouter()

CLOSE_BAD_TOKEN = 4401
# A client that takes no message for UiSettings.ws_send_timeout_s is given up: nothing more is sent to
# it and a close with CLOSE_TOO_SLOW is tried (a page that gets it reconnects). Its pump would
# otherwise wait in a send forever and keep the live view's poller running for
# nobody (a socket that is open but never read is not dropped by the websocket pings).
CLOSE_TOO_SLOW = 4408


class _Msg(BaseModel):
    model_config = ConfigDict(extra="ignore")


class InstructionMsg(_Msg):
    type: Literal["instruction"]
    text: str


class JudgeMsg(_Msg):
    type: Literal["judge"]
    trial_id: int
    judgement: str


class SusMsg(_Msg):
    type: Literal["sus"]
    block: int
    responses: list[Any]  # checked by bridge.study.sus.validate_responses (rejects true, 2.0, "3")


class CompareMsg(_Msg):
    """A pairwise episode's comparison: which half did better and each half's 0-100 progress."""

    type: Literal["compare"]
    episode_id: int = Field(strict=True)
    preference: str
    progress_a: int = Field(strict=True)  # strict: "50", 50.5 and true are refused, not rounded
    progress_b: int = Field(strict=True)
    reason: str = Field("", max_length=1000)


class PingMsg(_Msg):
    type: Literal["ping"]


class StartBlockMsg(_Msg):
    """The participant is ready for the next agent: reset the arm and the scene to the block's start."""

    type: Literal["start_block"]


ClientMessage = Annotated[
    InstructionMsg | JudgeMsg | SusMsg | PingMsg | StartBlockMsg | CompareMsg, Field(discriminator="type")
]
_adapter = TypeAdapter(ClientMessage)
_TYPES = ("instruction", "judge", "sus", "ping", "start_block", "compare")


class ClientMessageError(UiError, ValueError):
    """A websocket message that cannot be accepted; the message is the reason sent back."""


def parse_client_message(raw: Mapping[str, Any], max_bytes: int, allowed: tuple[str, ...] = _TYPES) -> BaseModel:
    """Parse one ASGI receive event into a typed message.

    Raises:
        ClientMessageError: binary, larger than ``max_bytes``, not JSON, not an object, unknown or
            disallowed ``type``, or fields of the wrong type.
    """
    text = raw.get("text")
    if text is None:
        raise ClientMessageError("binary messages are not accepted; send JSON text")
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise ClientMessageError(f"message too large (limit {max_bytes} bytes)")
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ClientMessageError("message is not valid JSON") from None
    if not isinstance(obj, dict):
        raise ClientMessageError('message must be a JSON object with a "type"')
    kind = obj.get("type")
    if kind not in allowed:
        raise ClientMessageError(f"unknown message type {str(kind)[:40]!r}; expected one of {list(allowed)}")
    try:
        return _adapter.validate_python(obj)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"][1:]) or "message"
        raise ClientMessageError(f"bad {kind} message: {where}: {first['msg']}") from None


class _Conn:
    """One websocket with serialised sends (pusher task and receiver share it)."""

    def __init__(self, ws: WebSocket, send_timeout_s: float) -> None:
        self.ws = ws
        self.send_timeout_s = send_timeout_s
        self.dead = False  # a send timed out: nothing more is sent
        self._lock = asyncio.Lock()

    async def send_json(self, obj: dict) -> bool:
        return await self._send(text=dumps_json(obj))

    async def send_bytes(self, data: bytes) -> bool:
        return await self._send(data=data)

    async def _send(self, text: str | None = None, data: bytes | None = None) -> bool:
        if self.dead or self.ws.application_state != WebSocketState.CONNECTED:
            return False
        async with self._lock:
            try:
                if text is not None:
                    send = self.ws.send_text(text)
                else:
                    assert data is not None  # send_json gives text, send_bytes data
                    send = self.ws.send_bytes(data)
                await asyncio.wait_for(send, self.send_timeout_s)
                return True
            except asyncio.TimeoutError:
                log.warning("giving up a websocket that took no message for %.0f s", self.send_timeout_s)
                self.dead = True
                try:  # the close frame waits behind the unread ones too: try, briefly
                    await asyncio.wait_for(self.ws.close(code=CLOSE_TOO_SLOW), 1.0)
                except (asyncio.TimeoutError, WebSocketDisconnect, RuntimeError, OSError):
                    pass
                return False
            except (WebSocketDisconnect, RuntimeError, OSError):
                return False


async def _open(ws: WebSocket, role: str, refusal: str):
    """Accept ``ws`` for a caller of ``role`` (from its ``token`` query parameter) and return
    ``(ctx, caller, conn)``; any other caller gets ``refusal`` and the bad-token close code, and
    ``None`` comes back."""
    ctx: AppContext = ws.app.state.ctx
    c = resolve_token(ctx, ws.query_params.get("token"))
    await ws.accept()
    if c is None or c.role != role:
        await ws.send_text(dumps_json({"type": "error", "error": refusal}))
        await ws.close(code=CLOSE_BAD_TOKEN)
        return None
    return ctx, c, _Conn(ws, ctx.settings.ws_send_timeout_s)


async def _pump(ctx: AppContext, conn: _Conn, status: Any) -> None:
    """Push each new frame as soon as the camera sends it, at most ``frame_rate_hz`` a second, and
    ``status()`` every status interval when it changed."""
    loop = asyncio.get_running_loop()
    frame_dt = 1.0 / ctx.settings.frame_rate_hz
    last_index = None
    last_status = None
    next_status_t = next_frame_t = loop.time()
    async with ctx.frames.watching():
        while True:
            now = loop.time()
            f = ctx.frames.fresh(last_index) if now >= next_frame_t else None
            if f is not None:
                last_index = f[1]
                if not await conn.send_bytes(f[0]):
                    return
                # Absolute periods: a frame sent late lets the next one go at once, so a late wake-up
                # (a loaded machine) costs no rate; more than a period behind, start afresh (no burst).
                next_frame_t = max(next_frame_t + frame_dt, loop.time() - frame_dt)
            if now >= next_status_t:
                next_status_t = now + ctx.settings.status_interval_s
                try:
                    s = status()
                except Exception:
                    log.exception("building the status message failed")
                    s = None
                if s is not None and s != last_status:
                    last_status = s
                    if not await conn.send_json(s):
                        return
            now = loop.time()
            if now < next_frame_t:  # this page had its frame of the period
                await asyncio.sleep(max(0.0, min(next_frame_t, next_status_t) - now))
            else:
                await ctx.frames.newer_than(last_index, next_status_t - now)


def _release_when_done(ctx: AppContext, claim: CurrentTrial, _task: asyncio.Task) -> None:
    release_arm(ctx, claim)


@router.websocket("/ws/participant")
async def participant_ws(ws: WebSocket) -> None:
    opened = await _open(ws, "participant", "unknown invite token")
    if opened is None:
        return
    ctx, c, conn = opened
    p = c.participant
    pid = p["id"]
    queued = participant_step(ctx, p).kind != "done"
    if queued:
        ctx.queue.join(pid)
    pusher = asyncio.create_task(_pump(ctx, conn, lambda: participant_state(ctx, p)))

    async def answer(work, failure: str) -> None:
        """Send what ``work`` returns (or its FlowError, or ``failure`` for anything else), then the
        new state; one message's failure never takes the connection down."""
        nonlocal queued
        try:
            for msg in await work():
                await conn.send_json(msg)
        except FlowError as e:
            await conn.send_json({"type": "error", "error": str(e)})
        except Exception:  # e.g. the database became unwritable: tell the participant, keep serving
            log.exception("participant request failed")
            await conn.send_json({"type": "error", "error": failure})
        try:
            # a pairwise episode made void when the repeats have run out can end the study: no
            # comparison follows to leave the queue after, and the arm must not stay with someone done
            if queued and participant_step(ctx, p).kind == "done":
                ctx.queue.leave(pid, all_connections=True)
                queued = False
        except Exception:
            log.exception("reading the participant's step failed")
        try:
            await conn.send_json(participant_state(ctx, p))
        except Exception:
            log.exception("building the participant state failed")

    async def start_block(step) -> None:
        async def work():
            return [await prepare_block(ctx, p, step, method="sim_reset")]

        await answer(work, "the robot could not be reset; please tell the operator")

    async def run_episode(step, text, claim) -> None:
        async def half_started(letter: str) -> None:
            await conn.send_json({"type": "trial_started", "alias": letter, "instruction": text})

        async def waiting(letter: str) -> None:
            await conn.send_json({"type": "waiting_for_scene", "alias": letter})

        async def work():
            shown = await pairwise_flow.run_episode(ctx, p, step, text, claim, on_half=half_started, on_wait=waiting)
            return [{"type": "episode_result", **shown}]

        await answer(work, "the episode could not be recorded; please tell the operator")

    async def run_trial(step, text, claim) -> None:
        async def work():
            await conn.send_json({"type": "trial_started", "alias": step.alias, "instruction": text})
            return [{"type": "trial_result", **await run_participant_trial(ctx, p, step, text, claim)}]

        await answer(work, "the trial could not be recorded; please tell the operator")

    try:
        while True:
            raw = await ws.receive()
            if raw["type"] == "websocket.disconnect":
                break
            try:
                msg = parse_client_message(raw, ctx.settings.max_message_bytes)
                if isinstance(msg, PingMsg):
                    await conn.send_json({"type": "pong"})
                elif isinstance(msg, InstructionMsg):
                    step, text = check_can_start(ctx, p, msg.text)
                    # now: the next message must see the arm busy
                    if pairwise_flow.is_pairwise(ctx, p):
                        claim = pairwise_flow.claim_episode(ctx, p, step, text)
                        runner = run_episode(step, text, claim)
                    else:
                        claim = claim_arm(ctx, p, step, text)
                        runner = run_trial(step, text, claim)
                    # The trial runs in its own task so this loop keeps answering (and the trial
                    # completes and is stored even if the participant closes the page meanwhile).
                    task = asyncio.create_task(runner)
                    ctx.tasks.add(task)
                    task.add_done_callback(ctx.tasks.discard)
                    task.add_done_callback(functools.partial(_release_when_done, ctx, claim))
                elif isinstance(msg, StartBlockMsg):
                    step = request_block_start(ctx, p)
                    if ctx.parts.scene_automatic:  # a simulator puts the scene back itself
                        task = asyncio.create_task(start_block(step))
                        ctx.tasks.add(task)
                        task.add_done_callback(ctx.tasks.discard)
                    else:  # real hardware: the operator restores the scene and confirms
                        ctx.pending_block = (pid, step.block)
                        await conn.send_json({"type": "waiting_for_scene", "alias": step.alias})
                elif isinstance(msg, JudgeMsg):
                    await conn.send_json(judge_trial(ctx, p, msg.trial_id, msg.judgement))
                    await conn.send_json(participant_state(ctx, p))
                elif isinstance(msg, CompareMsg):
                    saved = pairwise_flow.compare_episode(ctx, p, msg)
                    if participant_step(ctx, p).kind == "done" and queued:  # as after the last SUS
                        ctx.queue.leave(pid, all_connections=True)
                        queued = False
                    await conn.send_json(saved)
                    await conn.send_json(participant_state(ctx, p))
                elif isinstance(msg, SusMsg):
                    saved = submit_sus(ctx, p, msg.block, msg.responses)
                    # leave the queue before the next await: the pump must never push a "done" state
                    # that still has a queue position
                    if participant_step(ctx, p).kind == "done" and queued:
                        ctx.queue.leave(pid, all_connections=True)
                        queued = False
                    await conn.send_json(saved)
                    await conn.send_json(participant_state(ctx, p))
            except (ClientMessageError, FlowError) as e:
                await conn.send_json({"type": "error", "error": str(e)})
            except Exception:  # never let one message take the connection (or the server) down
                log.exception("participant message failed")
                await conn.send_json({"type": "error", "error": "internal error; the message was ignored"})
    except WebSocketDisconnect:
        pass
    finally:
        pusher.cancel()
        if queued:
            ctx.queue.leave(pid)


def operator_status(ctx: AppContext) -> dict[str, Any]:
    """The operator's ``status`` message (names agents; operator only)."""
    queue = []
    for i, pid in enumerate(ctx.queue.snapshot()):
        try:
            row = ctx.store.participant(pid)
            queue.append({"participant_id": pid, "label": row["label"], "study_id": row["study_id"], "position": i})
        except Exception:
            queue.append({"participant_id": pid, "label": "?", "study_id": None, "position": i})
    try:
        action = ctx.current.action if ctx.current is not None else None  # what the click is for
        reqs = [
            {**{k: r.get(k) for k in ("request_id", "instruction", "width", "height")}, "action": action}
            for r in ctx.parts.human.pending(with_images=False)
        ]
    except Exception:
        log.exception("human.pending() failed")
        reqs = []
    arm = ctx.station.state()  # the arm's latched state, the belief, stopped, busy (never raises)
    free = ctx.station.free_bytes()
    pending = None
    if ctx.pending_block is not None:
        pid, block = ctx.pending_block
        label = next((q["label"] for q in queue if q["participant_id"] == pid), "?")
        pending = {"participant_id": pid, "label": label, "block": block, "alias": f"Agent {block + 1}"}
    return {
        "type": "status",
        "queue": queue,
        "current": ctx.current.to_dict() if ctx.current else None,
        "human_requests": reqs,
        "stopped": ctx.stopped,
        "holding": ctx.station.belief.holding,
        "belief": ctx.station.belief.to_dict(),
        "free_mb": None if free is None else round(free / 1e6),
        "scene_automatic": ctx.parts.scene_automatic,
        "pending_block": pending,
        "pending_half": ctx.pending_half.to_dict() if ctx.pending_half is not None else None,
        "arm_state": finite_json(arm),
    }


@router.websocket("/ws/operator")
async def operator_ws(ws: WebSocket) -> None:
    opened = await _open(ws, "operator", "operator token required")
    if opened is None:
        return
    ctx, _, conn = opened
    pusher = asyncio.create_task(_pump(ctx, conn, lambda: operator_status(ctx)))
    try:
        while True:
            raw = await ws.receive()
            if raw["type"] == "websocket.disconnect":
                break
            try:
                parse_client_message(raw, ctx.settings.max_message_bytes, allowed=("ping",))
                await conn.send_json({"type": "pong"})
            except ClientMessageError as e:
                await conn.send_json({"type": "error", "error": str(e)})
    except WebSocketDisconnect:
        pass
    finally:
        pusher.cancel()
