"""The station role: one robot's trial station joined to a study server over Zenoh.

``StationNode`` wraps a running ``bridge.trials.station.Station`` (the single-process session's, with
its ROS node set on the station's own domain) and connects **out** to the server's Zenoh endpoint (a
lab behind NAT opens no port). It:

- declares the liveliness token ``pointlab/station/NAME`` (presence) and answers ``.../offer``;
- answers the commands ``.../cmd/VERB`` (``wire.VERBS``) by running them on the station, the trial's
  reply being its record;
- publishes the live view's JPEG frames on ``.../live`` at ``live_hz``;
- keeps every finished trial in its ``Journal`` and delivers it to ``pointlab/server/records`` until
  acknowledged (at once, and again every ``retry_s`` while any is left);
- **halts its arm by itself** when the server's token goes (server killed, network cut): the running
  trial is stopped in a controlled way (``Station.abort_current``), without waiting on the network.
  The emergency stop and the checks before motion are the station's own and never wait on the server.

Threads: Zenoh calls the query and liveliness handlers on its own threads; the station's coroutines
run on one asyncio loop in a thread of this node (``loop``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from pydantic import ValidationError

from pointlab.bridge.stations.journal import Journal, JournalStorePort
from pointlab.bridge.stations.recordings import recording_files
from pointlab.bridge.stations.wire import (
    FILES,
    RECORDS,
    SERVER_TOKEN,
    Offer,
    StationsError,
    TrialOrder,
    TrialRecord,
    b64,
    reply_json,
    station_key,
    station_token,
    zenoh_config,
)
from pointlab.bridge.trials.ports import HumanRelayPort, Slot
from pointlab.bridge.trials.station import Station, StationBusy, TrialSettings
from pointlab.bridge.trials.timing import RevealRule

__all__ = ["StationNode"]

log = logging.getLogger(__name__)

# the longest a command's reply may take: a whole trial (answer, reveal, motion, homing, look)
TRIAL_REPLY_S = 600.0


def _finite_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class StationNode:
    """One station on the study's Zenoh network (module docstring).

    Args:
        station: the running station (its ``ports.store`` is replaced by the journal's port).
        offer: what the station announces.
        journal: its journal (a SQLite file of its own).
        connect: Zenoh endpoints of the server, e.g. ``["tcp/127.0.0.1:7447"]``.
        user, password: the station's credentials (the server's credentials file); ``None``: none.
        tls: Zenoh TLS settings (``wire.zenoh_config``).
        live_hz: live-view frames published per second (0: none).
        retry_s: seconds between delivery attempts while records are undelivered.
        lease_s: Zenoh's transport lease (how soon a lost server is noticed).
        connect_timeout_s: give up when the server cannot be reached or refuses the credentials for
            this long at start (``None``: keep trying); once connected it reconnects by itself.
        human: the human reference's requests (``bridge.trials.ports.HumanRelayPort``; the session's
            ``ports.human``): the server's console shows them and sends the operator's click back
            (``cmd/human_pending``, ``cmd/human_answer``, ``cmd/human_decline``). ``None``: none.

    Raises:
        StationsError: Zenoh could not be opened (bad config, no server within ``connect_timeout_s``,
            refused credentials: Zenoh's handshake does not say which).
    """

    def __init__(
        self,
        station: Station,
        offer: Offer,
        journal: Journal,
        *,
        connect: list[str],
        user: str | None = None,
        password: str | None = None,
        tls: dict[str, str] | None = None,
        live_hz: float = 5.0,
        retry_s: float = 1.0,
        lease_s: float = 3.0,
        connect_timeout_s: float | None = 60.0,
        human: HumanRelayPort | None = None,
    ) -> None:
        import zenoh

        self.station, self.offer, self.journal = station, offer, journal
        self.human = human
        self.name = offer.name
        self.live_hz, self.retry_s = live_hz, retry_s
        self.server_up = False
        self.halts_on_server_loss = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._saved: dict[str, TrialRecord] = {}  # finished records not yet replied to their order
        self.station.ports.store = JournalStorePort(journal, on_saved=self._on_saved)
        n = len(journal.close_interrupted())
        if n:
            log.warning("%d trial(s) were running when this station stopped: kept as interrupted for delivery", n)
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="station-loop", daemon=True)
        self._loop_thread.start()
        cfg = zenoh_config(
            mode="client",
            connect=connect,
            user=user,
            password=password,
            tls=tls,
            lease_s=lease_s,
            connect_timeout_s=connect_timeout_s,
        )
        try:
            self.session = zenoh.open(cfg)
        except Exception as e:  # zenoh.ZError: unreachable router with exit_on_failure, refused auth
            self._stop_loop()
            raise StationsError(
                f"station {self.name}: no study server at {connect} accepted this station "
                f"(not reachable, or the credentials were refused): {e}"
            ) from e
        # one station per name: a second one would take the same trials (two arms for one command)
        if any(r.ok is not None for r in self.session.liveliness().get(station_token(self.name), timeout=3.0)):
            self.session.close()
            self._stop_loop()
            raise StationsError(
                f"a station named {self.name!r} is already connected to this server; give each robot its own --name"
            )
        self._decls: list[Any] = [
            self.session.declare_queryable(station_key(self.name, "offer"), self._on_offer),
            self.session.declare_queryable(station_key(self.name, "cmd", "*"), self._on_cmd),
            self.session.liveliness().declare_subscriber(SERVER_TOKEN, self._on_server, history=True),
        ]
        self._live_pub = self.session.declare_publisher(station_key(self.name, "live"))
        self._token = self.session.liveliness().declare_token(station_token(self.name))
        self._threads = [threading.Thread(target=self._deliver_loop, name="station-deliver", daemon=True)]
        if live_hz > 0:
            self._threads.append(threading.Thread(target=self._live_loop, name="station-live", daemon=True))
        for t in self._threads:
            t.start()

    def _on_saved(self, record: TrialRecord) -> None:
        self._saved[record.result["trial_id"]] = record
        self._wake.set()  # deliver at once

    # -- presence and the server ----------------------------------------------------------------
    def _on_server(self, sample) -> None:
        import zenoh

        up = sample.kind == zenoh.SampleKind.PUT
        self.server_up = up
        if up:
            log.info("station %s: study server is up", self.name)
            self._wake.set()  # deliver what was kept while it was away
            return
        # Lost the server: stop what the arm is doing now (a controlled stop, never waits on the network).
        log.warning("station %s: lost the study server; halting the running trial, if any", self.name)
        threading.Thread(target=self._halt_on_loss, name="station-halt", daemon=True).start()

    def _halt_on_loss(self) -> None:
        if self.station.abort_current(timeout_s=5.0):
            self.halts_on_server_loss += 1

    # -- queries ----------------------------------------------------------------------------------
    def _on_offer(self, query) -> None:
        with query:  # finalized on exit: the asker's get ends now, not when the object is collected
            query.reply(query.key_expr, self.offer.model_dump_json().encode())

    def _on_cmd(self, query) -> None:
        out = self._answer(query)
        if isinstance(out, Future):  # a coroutine on the station's loop: reply when it ends
            out.add_done_callback(lambda f: self._reply_later(query, f))
        else:
            with query:  # finalized on exit (see _on_offer)
                query.reply(query.key_expr, reply_json(self._with_status(out)))

    def _with_status(self, out: dict) -> dict:
        """``out`` with the station's ``status`` as it is after the command (``{"next_action":
        "pick"|"place", "stopped", "needs_reset"}``): what the participant's page shows comes with every
        answer, at no extra round trip."""
        status = self.status()
        return out if status is None else {**out, "status": status}

    def status(self) -> dict | None:
        """``{"next_action": "pick"|"place", "stopped", "needs_reset", "human_waiting": n}``: what the
        participant's page and the console show, sent with every command's answer and every live frame
        (``None`` when it cannot be read: a status read never costs an answer or a frame)."""
        try:
            return {
                "next_action": self.station.next_action(),
                "stopped": bool(self.station.stopped),
                "needs_reset": self.station.needs_reset is not None,
                "human_waiting": len(self.human.pending(with_images=False)) if self.human is not None else 0,
            }
        except Exception as e:
            log.debug("station %s: no status: %s", self.name, e)
            return None

    def _answer(self, query) -> dict | Future:
        verb = str(query.key_expr).rsplit("/", 1)[-1]
        try:
            body = json.loads(query.payload.to_bytes()) if query.payload is not None else {}
            if not isinstance(body, dict):
                raise ValueError("the payload is not a JSON object")
        except ValueError as e:
            return {"ok": False, "error": f"bad payload: {e}"}
        handler: Callable[[dict], Any] | None = getattr(self, f"_cmd_{verb}", None)
        if handler is None:
            return {"ok": False, "error": f"unknown command {verb!r}"}
        try:
            return handler(body)
        except Exception as e:  # a command's own failure is an answer, never a dead queryable
            log.exception("station %s: command %s failed", self.name, verb)
            return {"ok": False, "error": f"{type(e).__name__}: {e}"}

    def _reply_later(self, query, fut: Future) -> None:
        try:
            out = fut.result()
        except StationBusy as e:
            out = {"ok": False, "busy": True, "error": str(e)}
        except Exception as e:
            log.exception("station %s: %s failed", self.name, query.key_expr)
            out = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        try:
            with query:  # finalized on exit (see _on_offer)
                query.reply(query.key_expr, reply_json(self._with_status(out)))
        except Exception as e:  # the server went away meanwhile: the journal still delivers the record
            log.warning("station %s: reply to %s not sent: %s", self.name, query.key_expr, e)

    def _on_loop(self, coro) -> Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def _cmd_run_trial(self, body: dict) -> Future | dict:
        try:
            order = TrialOrder.model_validate(body)
            reveal = RevealRule(order.reveal_low_s, order.reveal_high_s)
        except (ValidationError, ValueError) as e:
            return {"ok": False, "error": f"bad trial order: {e}"}
        settings = TrialSettings(
            reveal=reveal, min_free_bytes=None if order.min_free_mb is None else order.min_free_mb * 1_000_000
        )
        slot = Slot(order.slot.study_id, order.slot.participant_id, order.slot.block)

        async def run() -> dict:
            ran = await self.station.run_trial(
                order.agent, order.instruction, slot=slot, settings=settings, trial_id=order.trial_id
            )
            record = self._saved.pop(ran.result.trial_id, None)
            return {"ok": True, "record": None if record is None else record.model_dump(mode="json")}

        return self._on_loop(run())

    def _cmd_reset_block(self, body: dict) -> Future:
        async def run() -> dict:
            res = await self.station.reset_block()
            jpeg = await self._fresh_jpeg()
            return {
                "ok": res.get("outcome") == "done",
                **res,
                "frame_index": None if jpeg is None else jpeg[1],
                # the block's starting scene as the camera saw it after the reset (the server stores it
                # with the block start; its own live copy can be a frame or two behind the reset)
                "frame_jpeg_b64": None if jpeg is None else b64(jpeg[0]),
            }

        return self._on_loop(run())

    async def _fresh_jpeg(self, timeout_s: float = 5.0) -> tuple[bytes, int] | None:
        """A camera frame taken after now (two frame indices on), or the latest at the timeout (as the
        single-process block start's ``ui.flow._fresh_frame``)."""
        camera = self.station.ports.camera
        first = camera.latest_jpeg()
        start = first[1] if first else -1
        deadline = time.monotonic() + timeout_s
        latest = first
        while time.monotonic() < deadline:
            latest = camera.latest_jpeg()
            if latest is not None and latest[1] >= start + 2:
                return latest
            await asyncio.sleep(0.02)
        return latest

    def _cmd_estop(self, body: dict) -> dict:
        self.station.emergency_stop()
        return {"ok": True}

    def _cmd_reset(self, body: dict) -> Future:
        def reset() -> dict:
            self.station.reset()  # blocks until the arm reports itself ready (at most 5 s)
            return {"ok": True}

        return self._on_loop(asyncio.to_thread(reset))

    def _cmd_home(self, body: dict) -> Future:
        async def run() -> dict:
            res = await self.station.home()
            return {"ok": res["outcome"] == "done", **res}

        return self._on_loop(run())

    def _cmd_abort(self, body: dict) -> dict:
        return {"ok": self.station.abort_current()}

    def _cmd_state(self, body: dict) -> dict:
        return {"ok": True, "state": self.station.state(), "journal": self.journal.counts()}

    # The human reference at the server's console: its open requests, the operator's click or decline.
    def _cmd_human_pending(self, body: dict) -> dict:
        return {"ok": True, "requests": [] if self.human is None else self.human.pending(with_images=True)}

    def _cmd_human_answer(self, body: dict) -> dict:
        req = self._human_request(body)
        if isinstance(req, str):
            return {"ok": False, "error": req}
        u, v = body.get("u"), body.get("v")
        if not (_finite_number(u) and _finite_number(v)):
            return {"ok": False, "invalid": True, "error": "u and v must be finite numbers (pixels)"}
        assert isinstance(u, (int, float)) and isinstance(v, (int, float))
        w, h = req.get("width"), req.get("height")
        # pixel centres are at integers: the image covers [-0.5, W - 0.5) x [-0.5, H - 0.5)
        if w and h and not (-0.5 <= u < w - 0.5 and -0.5 <= v < h - 0.5):
            return {"ok": False, "invalid": True, "error": f"point ({u}, {v}) is outside the {w}x{h} image"}
        assert self.human is not None
        return {"ok": self.human.answer(req["request_id"], float(u), float(v))}

    def _cmd_human_decline(self, body: dict) -> dict:
        req = self._human_request(body)
        if isinstance(req, str):
            return {"ok": False, "error": req}
        assert self.human is not None
        return {"ok": self.human.decline(req["request_id"])}

    def _human_request(self, body: dict) -> dict | str:
        """The open request ``body["request_id"]``, or why there is none."""
        if self.human is None:
            return "this station has no human reference"
        rid = body.get("request_id")
        got = next((r for r in self.human.pending(with_images=False) if r["request_id"] == rid), None)
        return got if got is not None else "no such open request"

    # -- delivery and the live view ---------------------------------------------------------------
    def _ask(self, key: str, payload: bytes, timeout_s: float, attachment: bytes | None = None) -> dict:
        """The server's JSON answer to one query on ``key`` (``{}``: none came)."""
        answer: dict = {}
        for reply in self.session.get(key, payload=payload, attachment=attachment, timeout=timeout_s):
            if reply.ok is not None:
                try:
                    got = json.loads(reply.ok.payload.to_bytes())
                except ValueError:
                    got = {}
                answer = got if isinstance(got, dict) else {}
        return answer

    def deliver_now(self, timeout_s: float = 10.0) -> int:
        """Deliver every undelivered record now, then the recordings of the acknowledged ones
        (``deliver_recordings_now``); returns how many records the server acknowledged."""
        acked = 0
        for record in self.journal.undelivered():
            answer = self._ask(f"{RECORDS}/{self.name}", record.model_dump_json().encode(), timeout_s)
            if answer.get("refused"):  # never storable as it is: kept aside in the journal, not retried
                log.error("station %s: the server refused trial %s: %s", self.name, record.result["trial_id"], answer)
                self.journal.refused(record.result["trial_id"], str(answer.get("error", "")))
                continue
            if not answer.get("ok"):
                return acked  # the server is away or cannot store now: keep the order, try again later
            self.journal.delivered(record.result["trial_id"])
            acked += 1
        self.deliver_recordings_now()
        return acked

    def deliver_recordings_now(self, timeout_s: float = 120.0) -> int:
        """Send the files of every acknowledged trial's recording (``bridge.stations.recordings``);
        returns how many trials' recordings are now complete at the server. A file the server refuses
        for good is logged and skipped; any other failure stops here, to be tried again."""
        done = 0
        root = self.journal.recordings_dir
        for uid, recording in self.journal.undelivered_recordings():
            files = recording_files(root, uid, recording) if root is not None else []
            for rel, path in files:
                try:
                    data = path.read_bytes()
                except OSError as e:  # deleted or unreadable here: nothing to send of it
                    log.error("station %s: recording file %s not sent: %s", self.name, path, e)
                    continue
                meta = {"trial_id": uid, "path": rel, "sha256": hashlib.sha256(data).hexdigest()}
                answer = self._ask(f"{FILES}/{self.name}", data, timeout_s, attachment=json.dumps(meta).encode())
                if answer.get("refused"):
                    log.error("station %s: the server refused %s: %s", self.name, rel, answer.get("error"))
                    continue
                if not answer.get("ok"):
                    return done
            self.journal.recording_delivered(uid)
            done += 1
        return done

    def _deliver_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.retry_s)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.deliver_now()
            except Exception as e:  # Zenoh closed under us at shutdown, a transient error: try later
                log.debug("station %s: delivery failed: %s", self.name, e)

    def _live_loop(self) -> None:
        last = None
        period = 1.0 / self.live_hz
        while not self._stop.wait(period):
            try:
                got = self.station.ports.camera.latest_jpeg()
                if got is not None and got[1] != last:
                    last = got[1]
                    meta = {"frame_index": got[1], "status": self.status()}
                    self._live_pub.put(got[0], attachment=json.dumps(meta).encode())
            except Exception as e:
                log.debug("station %s: live frame not published: %s", self.name, e)

    # -- shutdown ----------------------------------------------------------------------------------
    def _stop_loop(self) -> None:
        """Cancel what still runs on the station's loop (a trial in flight at shutdown ends through its
        own cleanup: its begun note stays in the journal, an ``interrupted`` record at the next start),
        then stop the loop."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self.loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(cancel_all(), self.loop).result(timeout=5.0)
            except Exception as e:  # a task that does not end within 5 s: the loop stops under it
                log.warning("station %s: tasks still running at shutdown: %s", self.name, e)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._loop_thread.join(timeout=5.0)

    def close(self) -> None:
        """Undeclare everything (the server sees the station go at once) and stop the threads."""
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join(timeout=5.0)
        try:
            self._token.undeclare()
            self.session.close()
        except Exception as e:
            log.debug("station %s: Zenoh close: %s", self.name, e)
        self._stop_loop()
        self.journal.close()

    def wait_server(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.server_up and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.server_up
