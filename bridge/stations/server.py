"""The study server's side of the stations: presence, dispatch, trials through stations, their records.

``StudyServer`` holds the Zenoh endpoint stations connect to (a Zenoh router listening on
``listen``), the study's store (PostgreSQL in a deployment, SQLite for one machine) and the
``Dispatcher``. It runs on one asyncio loop (``start(loop)``); Zenoh's handler threads hand their
events to that loop.

- **Presence**: a station's liveliness token ``pointlab/station/NAME`` (``wire``) appears: the server
  asks ``.../offer`` and the station is ``idle``; the token goes (kill -9, a cut cable, after the
  transport lease): the station is ``offline``. A restarted server finds its stations from the
  tokens' history.
- **Trials**: ``run_trial`` sends ``cmd/run_trial`` with a trial id the server chose and waits for
  either the record (the reply) or the station's loss. On loss the trial is stored ``aborted`` /
  ``station_lost`` under that id (not charged: docs/trials.md), the participant goes back to the front
  of the line, and a late record of the same id from the station's journal is acknowledged and dropped.
- **Records**: ``pointlab/server/records/NAME`` takes a station's finished trials (its journal's
  delivery); each is stored once by its id (a repeat is acknowledged: at-least-once delivery,
  exactly-once storage) and acknowledged only after the commit.

Raises ``StationsError`` (Zenoh could not listen) from ``start``; the participant-facing methods raise
``ServerBusy`` (not now: waiting for a station, wrong step) with a message a participant may read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pointlab.bridge.errors import BridgeError
from pointlab.bridge.stations.dispatch import Dispatcher
from pointlab.bridge.stations.recordings import ChecksumMismatch, RecordingSink
from pointlab.bridge.stations.wire import (
    FILES,
    RECORDS,
    SERVER_TOKEN,
    STATION_ROOT,
    Offer,
    StationsError,
    TrialRecord,
    name_of,
    reply_json,
    station_key,
    unb64,
    zenoh_config,
)
from pointlab.bridge.study.design import Step
from pointlab.bridge.study.steps import NotDue, step_of, store_comparison, store_judgement, store_sus
from pointlab.bridge.study.store import Store, StoreError
from pointlab.bridge.trials.record import TrialResult, unfinished_trial

__all__ = ["StudyServer", "ServerBusy", "LOST_DETAIL"]

log = logging.getLogger(__name__)

LOST_DETAIL = "the study server lost the station during the trial (station killed or network cut)"
COMMAND_S = 120.0  # a block's reset: release, home, scene restore
TRIAL_S = 600.0  # a whole trial, the reveal time and the operator's human reference included


class ServerBusy(BridgeError):
    """A participant's request cannot be served now (the message is for the participant)."""


@dataclass
class _Inflight:
    trial_id: str
    slot: dict
    agent: str
    instruction: str
    action: str
    station: str
    lost: asyncio.Event


class StudyServer:
    """Zenoh endpoint, dispatch and records of one study server (module docstring).

    Args:
        store: the study store (``Store("postgresql+psycopg://...")`` in a deployment).
        listen: Zenoh endpoints to listen on, e.g. ``["tcp/0.0.0.0:7447"]``.
        credentials_file: Zenoh ``user:password`` lines, one per station (``None``: no authentication).
        acl: Zenoh ``access_control`` block (``security.station_acl``); ``None``: none.
        tls: Zenoh TLS settings (``wire.zenoh_config``).
        lease_s: the transport lease: a station gone without closing is offline after about this.
        recordings_dir: where the stations' recordings are kept (``recordings.RecordingSink``:
            ``DIR/STATION/...``); ``None``: the server keeps none (each file is acknowledged unkept,
            and the recordings stay at the stations).
    """

    def __init__(
        self,
        store: Store,
        *,
        listen: list[str],
        credentials_file: str | None = None,
        acl: dict | None = None,
        tls: dict[str, str] | None = None,
        lease_s: float = 3.0,
        recordings_dir: str | Path | None = None,
    ) -> None:
        self.store = store
        self.sink = RecordingSink(recordings_dir) if recordings_dir is not None else None
        # files are written off Zenoh's callback threads, one at a time (the disk is the limit)
        self._files = ThreadPoolExecutor(1, thread_name_prefix="server-files")
        self.dispatch = Dispatcher()
        self.live: dict[str, tuple[bytes, int]] = {}  # station -> (JPEG, frame index)
        # station -> {"next_action", "stopped", "needs_reset"} as its last answer to a command said
        self.status: dict[str, dict] = {}
        self._cfg: dict[str, Any] = dict(
            listen=listen, credentials_file=credentials_file, acl=acl, tls=tls, lease_s=lease_s
        )
        self._inflight: dict[str, _Inflight | None] = {}  # station -> its running trial (None: claimed)
        self._ready: dict[int, tuple[str, int]] = {}  # participant -> (station, block) reset for it
        self._steps: dict[int, tuple[int, Step]] = {}  # participant -> (generation, next step): ``step``
        self._gen: dict[int, int] = {}  # participant -> writes about it so far
        self._studies: dict[int, dict] = {}  # study id -> its row (``_study``)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.session: Any = None
        self.stats = {"records": 0, "duplicates": 0, "refused": 0, "lost_trials": 0, "recording_files": 0}

    # -- lifecycle ------------------------------------------------------------------------------
    def open(self) -> None:
        """Listen (before the web app starts, so that a busy port or a bad certificate is one error
        line, not a server that printed its URL and died). Raises StationsError."""
        import zenoh

        if self.session is not None:
            return
        cfg = zenoh_config(mode="router", **self._cfg)
        try:
            self.session = zenoh.open(cfg)
        except Exception as e:  # zenoh.ZError: address in use, TLS files refused
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise StationsError(
                f"the study server could not listen on {', '.join(self._cfg['listen'])}: {first}"
            ) from e

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Listen (``open``) and declare; call on ``loop``'s thread before serving. Raises StationsError.
        Pairwise episodes a previous run of the server left unfinished (it died between the halves) are
        closed first: void, their slots offered again."""
        self.store.close_unfinished_episodes()
        self.open()
        self.loop = loop
        self._decls = [
            self.session.declare_queryable(f"{RECORDS}/*", self._on_record),
            self.session.declare_queryable(f"{FILES}/*", self._on_file),
            self.session.declare_subscriber(f"{STATION_ROOT}/*/live", self._on_live),
            self.session.liveliness().declare_subscriber(f"{STATION_ROOT}/*", self._on_presence, history=True),
        ]
        self._token = self.session.liveliness().declare_token(SERVER_TOKEN)

    def close(self) -> None:
        if self.session is not None:
            try:
                self._token.undeclare()
                self.session.close()
            except Exception as e:
                log.debug("Zenoh close: %s", e)
            self.session = None
        self._files.shutdown(wait=True, cancel_futures=True)  # a file being written is finished

    def _soon(self, fn, *args) -> None:
        """Run ``fn(*args)`` on the server's loop (from a Zenoh thread)."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn, *args)

    # -- presence -------------------------------------------------------------------------------
    def _on_presence(self, sample) -> None:
        import zenoh

        name = name_of(str(sample.key_expr))
        if name is None or str(sample.key_expr) != f"{STATION_ROOT}/{name}":
            return
        if sample.kind == zenoh.SampleKind.PUT:
            offer = self._ask_offer(name)  # on Zenoh's thread: the loop never blocks on a station
            self._soon(self._station_up, name, offer)
        else:
            self._soon(self._station_down, name)

    def _ask_offer(self, name: str) -> dict:
        for reply in self.session.get(station_key(name, "offer"), timeout=5.0):
            if reply.ok is not None:
                try:
                    offer = Offer.model_validate_json(reply.ok.payload.to_bytes())
                except ValidationError as e:
                    log.warning("station %s: bad offer: %s", name, e)
                    return {}
                if offer.name == name:
                    return offer.model_dump()
        return {}

    def _station_up(self, name: str, offer: dict) -> None:
        if not offer:
            log.warning("station %s is up but gave no valid offer: not dispatched to", name)
            return
        self.dispatch.station_up(name, offer)
        self.dispatch.assign()  # someone may be waiting for it
        log.info("station %s up (scene %r)", name, offer.get("scene"))

    def _station_down(self, name: str) -> None:
        pid = self.dispatch.station_down(name)
        log.warning("station %s offline (held participant %s)", name, pid)
        inflight = self._inflight.get(name)
        if inflight is not None:
            inflight.lost.set()

    # -- records --------------------------------------------------------------------------------
    def _on_record(self, query) -> None:
        with query:  # finalized on exit: the station's delivery ends now, not when the query is collected
            query.reply(query.key_expr, reply_json(self._record_reply(query)))

    def _record_reply(self, query) -> dict:
        sender = str(query.key_expr).rsplit("/", 1)[-1]
        try:
            record = TrialRecord.model_validate_json(query.payload.to_bytes() if query.payload else b"")
        except ValidationError as e:
            self.stats["refused"] += 1
            return {"ok": False, "refused": True, "error": f"bad record: {e.error_count()} errors"}
        try:
            return self.accept(record, sender=sender)
        except (StoreError, ValueError) as e:
            # this record will never be stored as it is (another station's, an unknown participant):
            # ``refused`` tells the station to set it aside instead of retrying it before the rest
            self.stats["refused"] += 1
            return {"ok": False, "refused": True, "error": str(e)}
        except Exception as e:  # the store is down: not acknowledged, the station tries again
            log.exception("record from %s not stored now", sender)
            return {"ok": False, "error": f"the store cannot take it now: {type(e).__name__}"}

    def _on_file(self, query) -> None:
        self._files.submit(self._answer_file, query)

    def _answer_file(self, query) -> None:
        try:
            reply = self._file_reply(query)
        except Exception as e:  # the disk or the store: not acknowledged, the station sends it again
            log.exception("recording file from %s not kept now", query.key_expr)
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        with query:  # finalized on exit (see _on_record)
            query.reply(query.key_expr, reply_json(reply))

    def _file_reply(self, query) -> dict:
        """One recording file from a station (``recordings.RecordingSink``): kept only for a trial the
        store has from that station. ``refused`` for what can never be kept (bad path or metadata, a
        trial of another station); not ``ok`` for what may work later (disk, store, a cut transfer)."""
        sender = str(query.key_expr).rsplit("/", 1)[-1]
        try:
            meta = json.loads(query.attachment.to_bytes()) if query.attachment is not None else {}
        except ValueError:
            meta = None
        if not isinstance(meta, dict):
            return {"ok": False, "refused": True, "error": "the attachment is not a JSON object"}
        if self.sink is None:
            return {"ok": True, "kept": False}
        row_id = self.store.trial_id_of(str(meta.get("trial_id")))
        if row_id is None or self.store.trial(row_id).get("station") != sender:
            return {"ok": False, "refused": True, "error": f"no trial {meta.get('trial_id')!r} of station {sender}"}
        data = query.payload.to_bytes() if query.payload is not None else b""
        try:
            self.sink.receive(sender, meta, data)
        except ChecksumMismatch as e:  # a cut transfer: sent again
            return {"ok": False, "error": str(e)}
        except StationsError as e:  # a bad path or metadata never works
            return {"ok": False, "refused": True, "error": str(e)}
        self.stats["recording_files"] += 1
        return {"ok": True, "kept": True}

    def accept(self, record: TrialRecord, *, sender: str) -> dict:
        """Store ``record`` once (by its trial id); returns ``{"ok", "trial_row", "duplicate"}``.

        Raises:
            ValueError: the record names another station than its sender, or its result is not a
                valid ``TrialResult``.
            StoreError: the store refused it (unknown study/participant, database down): not acknowledged.
        """
        if record.station != sender:
            raise ValueError(f"a record of station {record.station!r} delivered by {sender!r}")
        result = TrialResult.model_validate(record.result)
        uid = result.trial_id
        existing = self.store.trial_id_of(uid)
        if existing is None:
            try:
                existing = self.store.save_trial(
                    result,
                    study_id=record.slot.study_id,
                    participant_id=record.slot.participant_id,
                    block=record.slot.block,
                    frames={k: unb64(v) for k, v in record.frames.items()},
                )
                self.stats["records"] += 1
                self._changed(record.slot.participant_id)
                return {"ok": True, "trial_row": existing, "duplicate": False}
            except StoreError:
                existing = self.store.trial_id_of(uid)  # stored meanwhile by the other path
                if existing is None:
                    raise
        self.stats["duplicates"] += 1
        # the other path (the journal's delivery on a Zenoh thread, or the trial's reply) may have
        # committed it an instant ago and not yet said so: a step cached before that commit must not be
        # used for this participant again (it would say "repeats used up" of a repeatable abort)
        self._changed(record.slot.participant_id)
        return {"ok": True, "trial_row": existing, "duplicate": True}

    def _on_live(self, sample) -> None:
        """A live frame: its JPEG, and the station's status (``StationNode.status``) in its attachment."""
        name = name_of(str(sample.key_expr))
        if name is None:
            return
        meta: Any = {}
        if sample.attachment is not None:
            try:
                meta = json.loads(sample.attachment.to_bytes())
            except ValueError:
                meta = {}
        if not isinstance(meta, dict):
            meta = {}
        index = meta.get("frame_index")
        self.live[name] = (sample.payload.to_bytes(), index if isinstance(index, int) else -1)
        if isinstance(meta.get("status"), dict):
            self.status[name] = meta["status"]

    # -- commands to stations -------------------------------------------------------------------
    async def _query(self, key: str, body: dict, timeout_s: float) -> dict | None:
        """One query's JSON reply, ``None`` when nobody answered within ``timeout_s``.

        Zenoh calls back for each reply and once more when the query is over (the ``drop`` of its
        callback handler); no thread waits meanwhile, so a hundred trials in flight hold no thread
        each (a blocking ``get`` in ``asyncio.to_thread`` did: the default executor's few workers
        capped the trials the server could run at once, docs/stations.md "Scale")."""
        import zenoh

        loop = asyncio.get_running_loop()
        done: asyncio.Future = loop.create_future()
        got: list[dict] = []

        def on_reply(reply) -> None:
            if reply.ok is None:
                return
            try:
                out = json.loads(reply.ok.payload.to_bytes())
            except ValueError:
                out = {"ok": False, "error": "the station's reply is not JSON"}
            got.append(out if isinstance(out, dict) else {"ok": False, "error": "the station's reply is not an object"})

        def settle() -> None:
            if not done.done():  # (the server's caller may have been cancelled meanwhile)
                done.set_result(got[0] if got else None)

        def on_end() -> None:
            loop.call_soon_threadsafe(settle)

        self.session.get(key, zenoh.handlers.Callback(on_reply, on_end), payload=reply_json(body), timeout=timeout_s)
        return await done

    async def command(self, name: str, verb: str, body: dict | None = None, timeout_s: float = COMMAND_S) -> dict:
        """Send ``verb`` to station ``name``; its reply, or ``{"ok": False, "lost": True}`` when the
        station went offline or gave no answer within ``timeout_s``."""
        got = await self._query(station_key(name, "cmd", verb), body or {}, timeout_s)
        if got is not None and isinstance(got.get("status"), dict):
            self.status[name] = got["status"]  # as the station is after this command (its pages show it)
        return got if got is not None else {"ok": False, "lost": True, "error": f"station {name} did not answer"}

    async def estop_all(self) -> dict[str, bool]:
        """The console's EMERGENCY STOP: sent to every station at once (each stops on its own)."""
        names = [n for n, v in self.dispatch.stations.items() if v.status != "offline"]
        replies = await asyncio.gather(*(self.command(n, "estop", timeout_s=5.0) for n in names))
        return {n: bool(r.get("ok")) for n, r in zip(names, replies)}

    async def human_requests(self) -> list[dict]:
        """The human reference's open requests at every station that says it has one (its status),
        each with ``station`` and the running trial's ``action`` (pick / place) added
        (``HumanRelayPort.pending``: ``request_id``, ``instruction``, ``jpeg_b64``, ``width``, ``height``)."""
        names = [
            n
            for n, v in self.dispatch.stations.items()
            if v.status != "offline" and self.status.get(n, {}).get("human_waiting")
        ]
        replies = await asyncio.gather(*(self.command(n, "human_pending", timeout_s=10.0) for n in names))

        def action(name: str) -> str | None:
            running = self._inflight.get(name)
            return running.action if running is not None else None

        return [
            {"action": action(n), **r, "station": n}
            for n, reply in zip(names, replies)
            for r in (reply.get("requests") or [])
            if isinstance(r, dict)
        ]

    # -- a participant's study through the stations -----------------------------------------------
    def step(self, participant: dict) -> Step:
        """The participant's next step. Kept per participant until a write of this server changes it
        (a trial stored, a judgement, a questionnaire, a block start): every write of a study goes
        through its server, and a waiting participant's page asks for its step about once a second,
        which would otherwise be four queries each (docs/stations.md, "Scale")."""
        pid = participant["id"]
        gen = self._gen.get(pid, 0)
        got = self._steps.get(pid)
        if got is None or got[0] != gen:
            # computed from the store as of now: a write that lands meanwhile bumps the generation
            # after its commit, so this value is not used again
            got = self._steps[pid] = (gen, step_of(self.store, participant))
        return got[1]

    def _changed(self, participant_id: int | None) -> None:
        """Call after a write about ``participant_id`` has committed (any thread)."""
        if participant_id is not None:
            self._gen[participant_id] = self._gen.get(participant_id, 0) + 1

    def judge(self, participant: dict, trial_id: int, judgement: str) -> None:
        """Store the participant's judgement of its pending trial (``steps.store_judgement``).
        Raises ValueError (not a judgement), ServerBusy (no such trial pending, refused by the store)."""
        try:
            store_judgement(self.store, self.step(participant), trial_id, judgement)
        except NotDue as e:
            raise ServerBusy(str(e)) from e
        finally:
            self._changed(participant["id"])

    def submit_sus(self, participant: dict, block: int, responses: list) -> None:
        """Store the block's SUS questionnaire and free the participant's station for the next in
        line. Raises ServerBusy (no questionnaire due), ``bridge.study.sus.SusError`` (bad responses)."""
        try:
            store_sus(self.store, participant, self.step(participant), block, responses)
        except NotDue as e:
            raise ServerBusy(str(e)) from e
        finally:
            self._changed(participant["id"])
        self.dispatch.release(participant["id"])  # its station is free for the next in line

    def _study(self, study_id: int) -> dict:
        """A study's row, read once: a study does not change after it is created (``Store`` has no
        update), and a waiting participant's every poll needs its scene."""
        got = self._studies.get(study_id)
        if got is None:
            got = self._studies[study_id] = self.store.study(study_id)
        return got

    def mode(self, participant: dict) -> str:
        """The participant's study's mode: ``absolute`` or ``pairwise``."""
        return str(self._study(participant["study_id"]).get("mode") or "absolute")

    def _scene(self, participant: dict) -> str:
        return str(self._study(participant["study_id"])["scene"] or "")

    async def _reset(self, name: str) -> dict:
        """Station ``name``'s ``reset_block`` (the start scene back, the arm home), shown as
        ``resetting`` meanwhile; returns its reply."""
        self.dispatch.set_status(name, "resetting")
        try:
            return await self.command(name, "reset_block")
        finally:
            self.dispatch.set_status(name, "idle")

    async def _station_for(self, participant: dict, block: int) -> str:
        """The station ``participant`` runs ``block`` on: the one it holds, reset to the block's
        reference scene the first time it runs this block there (a block start, or a move after its
        station was lost). Raises ServerBusy while it waits in line or the reset failed."""
        pid = participant["id"]
        name = self.dispatch.request(pid, self._scene(participant))
        if name is None:
            pos = self.dispatch.position(pid)
            raise ServerBusy(f"waiting for a free robot station (place {0 if pos is None else pos + 1} in line)")
        if self._ready.get(pid) == (name, block):
            return name
        res = await self._reset(name)
        if not res.get("ok"):
            self.dispatch.release(pid)
            raise ServerBusy("the robot station could not be reset; please wait")
        self._ready[pid] = (name, block)
        if all(b["block"] != block for b in self.store.block_starts(participant_id=pid)):
            # the frame the station took after its reset (the live copy here can still show the last
            # participant's scene: a newcomer's bundle had block starts with the cube in the gripper)
            fresh = res.get("frame_jpeg_b64")
            frame = (unb64(fresh), res.get("frame_index")) if isinstance(fresh, str) else self.live.get(name)
            self.store.save_block_start(
                study_id=participant["study_id"],
                participant_id=pid,
                block=block,
                method="sim_reset"
                if self.dispatch.stations[name].offer.get("automatic_reset")
                else "operator_confirmed",
                frame_jpeg=frame[0] if frame else None,
                frame_index=frame[1] if frame else None,
            )
            self._changed(pid)
        else:  # the block had started on a station that was lost: one start per block, the move is logged
            log.info("participant %s block %s moved to station %s", pid, block, name)
        return name

    def next_action(self, participant: dict, block: int | None) -> str:
        """What the participant's next trial will do (``pick``/``place``), as its page says it: the
        station's own next action once that station is reset for this block; ``pick`` before (a
        station given after a loss, or none yet: the block's reset comes first and puts the scene back,
        the gripper empty)."""
        name = self.dispatch.station_of(participant["id"])
        if self._study(participant["study_id"]).get("mode") == "pairwise":
            return "pick"  # every half starts from the restored start scene, holding nothing
        if name is None or self._ready.get(participant["id"]) != (name, block):
            return "pick"
        return str(self.status.get(name, {}).get("next_action", "pick"))

    async def start_block(self, participant: dict) -> dict:
        """The block's start: a station for it, reset to the reference scene. Raises ServerBusy."""
        step = self.step(participant)
        if step.kind != "setup":
            raise ServerBusy("there is no agent block to start now")
        assert step.block is not None
        name = await self._station_for(participant, step.block)
        return {"type": "block_started", "block": step.block, "station": name}

    async def run_trial(self, participant: dict, instruction: str) -> int:
        """Run the participant's next trial on its station; returns the stored trial's row id (the
        record, or the ``station_lost`` abort). Raises ServerBusy."""
        step = self.step(participant)
        if step.kind != "trial":
            raise ServerBusy(f"no trial is due now (next: {step.kind})")
        assert step.block is not None
        name = await self._station_for(participant, step.block)
        if name in self._inflight:  # a second request of the same participant (a double click)
            raise ServerBusy("the robot is busy")
        self._inflight[name] = None  # claimed before the next await: one trial per station
        try:
            return await self._run_on(name, participant, step.block, instruction)
        finally:
            self._inflight.pop(name, None)

    async def run_episode(self, participant: dict, instruction: str) -> int:
        """A pairwise study's next episode on the participant's station: the pair by the study's pair
        sampling (``bridge.study.episodes.pick_pair``), then for A and for B a reset of the station to
        the start scene and the half's trial, each stored and linked to the episode; an aborted half
        (a lost station included) ends the episode there, void. The participant holds the station
        from its first episode to its last comparison. Returns the episode's id. Raises ServerBusy."""
        from pointlab.bridge.study.episodes import open_episode, pick_pair

        step = self.step(participant)
        if step.kind != "trial":
            raise ServerBusy(f"no episode is due now (next: {step.kind})")
        pid = participant["id"]
        name = self.dispatch.request(pid, self._scene(participant))
        if name is None:
            pos = self.dispatch.position(pid)
            raise ServerBusy(f"waiting for a free robot station (place {0 if pos is None else pos + 1} in line)")
        if name in self._inflight:
            raise ServerBusy("the robot is busy")
        self._inflight[name] = None  # claimed before the next await: one episode per station
        episode_id = None
        try:
            study = self._study(participant["study_id"])
            a, b = pick_pair(study, self.store.episodes(study_id=study["id"]))
            episode = open_episode(self.store, study, pid, instruction, (a, b))
            episode_id, number = episode["id"], episode["number"]
            self._changed(pid)
            for half, agent in (("a", a), ("b", b)):
                reset = await self._reset(name)
                if not reset.get("ok"):
                    if reset.get("lost") or self.dispatch.stations[name].status == "offline":
                        # the station went away between the halves: this half is lost with it, as a
                        # trial cut by a loss is (station_lost: the episode's slot never uses a repeat)
                        if reset.get("lost"):
                            self.dispatch.station_down(name)
                        lost = _Inflight(
                            trial_id=uuid.uuid4().hex,
                            slot={"study_id": study["id"], "participant_id": pid, "block": number - 1},
                            agent=agent,
                            instruction=instruction,
                            action="pick",
                            station=name,
                            lost=asyncio.Event(),
                        )
                        self.store.set_episode_half(episode_id, half, self._store_lost(lost))
                        raise ServerBusy("the robot's station went offline; this episode does not count")
                    raise ServerBusy("the robot station could not be reset; please wait")
                row = await self._run_on(name, participant, number - 1, instruction, agent=agent)
                self.store.set_episode_half(episode_id, half, row)
                self._changed(pid)
                if self.store.trial(row).get("outcome") == "aborted":
                    break
            else:
                if self.dispatch.stations[name].offer.get("automatic_reset"):
                    # the next instruction is typed looking at the live view: the start scene, not B's end
                    await self.command(name, "reset_block")
        finally:
            if episode_id is not None:  # its run has ended, by whatever path: a missing half now voids it
                self.store.finish_episode(episode_id)
                self._changed(pid)
            self._inflight.pop(name, None)
        if self.step(participant).kind == "done":  # void episodes whose repeats ran out end the study
            self.dispatch.release(pid)
        return episode_id

    def compare(self, participant: dict, msg: Any) -> None:
        """Store the comparison of the participant's pending episode (``msg``: ``episode_id``,
        ``preference``, ``progress_a``, ``progress_b``, ``reason``); after the last one its station is
        free for the next in line. Raises ServerBusy (not due, a bad value, compared already)."""
        try:
            store_comparison(self.store, self.step(participant), msg)
        except NotDue as e:
            raise ServerBusy(str(e)) from e
        finally:
            self._changed(participant["id"])
        if self.step(participant).kind == "done":
            self.dispatch.release(participant["id"])

    async def _run_on(
        self, name: str, participant: dict, block: int, instruction: str, *, agent: str | None = None
    ) -> int:
        state = await self.command(name, "state", timeout_s=10.0)
        if not state.get("ok"):
            raise ServerBusy("the robot station did not answer; please wait")
        holding = bool(((state.get("state") or {}).get("belief") or {}).get("holding"))
        study = self._study(participant["study_id"])
        inflight = _Inflight(
            trial_id=uuid.uuid4().hex,
            slot={"study_id": participant["study_id"], "participant_id": participant["id"], "block": block},
            agent=agent if agent is not None else participant["agent_order"][block],
            instruction=instruction,
            action="place" if holding else "pick",
            station=name,
            lost=asyncio.Event(),
        )
        order = {
            "trial_id": inflight.trial_id,
            "agent": inflight.agent,
            "instruction": instruction,
            "slot": inflight.slot,
            "reveal_low_s": float(study["reveal_low_s"]),
            "reveal_high_s": float(study["reveal_high_s"]),
            "min_free_mb": study.get("min_free_mb"),
        }
        self._inflight[name] = inflight
        self.dispatch.set_status(name, "in_trial")
        try:
            reply_task = asyncio.ensure_future(self.command(name, "run_trial", order, timeout_s=TRIAL_S))
            lost_task = asyncio.ensure_future(inflight.lost.wait())
            await asyncio.wait({reply_task, lost_task}, return_when=asyncio.FIRST_COMPLETED)
            lost_task.cancel()
            if inflight.lost.is_set() or not reply_task.done():
                return self._store_lost(inflight)
            reply = reply_task.result()
        finally:
            self._inflight[name] = None  # still claimed until run_trial returns
            self.dispatch.set_status(name, "idle")
        if reply.get("busy"):
            raise ServerBusy(str(reply.get("error") or "the robot is busy"))
        if reply.get("lost"):
            self.dispatch.station_down(name)  # it stopped answering: treat it as lost
            return self._store_lost(inflight)
        if not reply.get("ok") or not reply.get("record"):
            log.error("station %s could not run a trial of %s: %s", name, inflight.agent, reply.get("error"))
            raise ServerBusy("the trial could not run; please tell the operator")
        self.dispatch.stations[name].trials += 1
        stored = self.accept(TrialRecord.model_validate(reply["record"]), sender=name)
        return int(stored["trial_row"])

    def _store_lost(self, t: _Inflight) -> int:
        """Store the in-flight trial ``t`` as aborted ``station_lost`` (once, by its id)."""
        existing = self.store.trial_id_of(t.trial_id)
        if existing is not None:  # its record came in before the loss was noticed
            return existing
        result = unfinished_trial(
            t.trial_id,
            agent=t.agent,
            instruction=t.instruction,
            action=t.action,
            code="station_lost",
            detail=LOST_DETAIL,
            station=t.station,
        )
        self.stats["lost_trials"] += 1
        try:
            return self.store.save_trial(result, **t.slot)
        finally:
            self._changed(t.slot["participant_id"])

    def release_station(self, name: str) -> int | None:
        """The console's *Release*: the participant holding ``name`` (who left mid-block) lets it go;
        they go back in line when they return. Returns that participant's id, ``None`` when free."""
        view = self.dispatch.stations.get(name)
        pid = None if view is None else view.participant_id
        if pid is not None:
            self.dispatch.release(pid)
            self._ready.pop(pid, None)
        return pid

    def offers(self) -> list[dict]:
        """The offers of the stations the server knows (online or not)."""
        return [v.offer for v in self.dispatch.stations.values()]

    def console(self) -> dict:
        """Every station (status, scene, participant, counts, whether it is stopped or waits for Home,
        as its last status said), the line and the record counts."""
        return {
            "stations": [
                {
                    "name": v.name,
                    "status": v.status,
                    "stopped": bool(self.status.get(v.name, {}).get("stopped")) and v.status != "offline",
                    "needs_home": bool(self.status.get(v.name, {}).get("needs_reset")) and v.status != "offline",
                    "scene": v.scene,
                    "participant_id": v.participant_id,
                    "sim": v.offer.get("sim"),
                    "arm": v.offer.get("arm"),
                    "camera": v.offer.get("camera"),
                    "trials": v.trials,
                    "lost": v.lost,
                }
                for v in sorted(self.dispatch.stations.values(), key=lambda v: v.name)
            ],
            "queue": [pid for pid, _ in self.dispatch.waiting],
            "records": dict(self.stats),
            "time_unix_s": time.time(),
        }
