"""Lightweight simulated stations for ``pointlab perf stations --fleet N`` (a test double of a robot
station: no rendering, no ROS, no physics).

Each simulated station is its own Zenoh client session (its own TCP connection to the server, as a
real station has) that holds the liveliness token ``pointlab/station/NAME``, answers ``.../offer`` and
``.../cmd/VERB`` as ``bridge.stations.station_node.StationNode`` does, and takes the time a real one
takes: a trial lasts a draw from a lognormal around ``trial_s`` (PointArena's Point-Act trials: the
reveal time of 10-26 s plus the motion and homing), a block's reset ``reset_s``, both multiplied by
``time_scale``. A trial's record (a completed motion, to be judged, with a small JPEG as both frames)
is the reply, and is delivered to ``pointlab/server/records/NAME`` too, as a journal would.
"""

from __future__ import annotations

import json
import logging
import random
import threading

import numpy as np

from pointlab.bridge.stations.wire import RECORDS, Offer, TrialOrder, b64, reply_json, station_key, station_token
from pointlab.bridge.stations.wire import zenoh_config
from pointlab.bridge.trials.record import TrialResult
import cv2

__all__ = ["SimFleet"]

log = logging.getLogger(__name__)


class _SimStation:
    def __init__(self, fleet: "SimFleet", name: str) -> None:
        import zenoh

        self.fleet, self.name = fleet, name
        self.holding = False
        self.session = zenoh.open(zenoh_config(mode="client", connect=fleet.connect, lease_s=fleet.lease_s))
        self.offer = Offer(
            name=name, scene=fleet.scene, arm="sim-fleet", camera="none", sim=True, agents=fleet.agents
        ).model_dump_json()
        self.decls = [
            self.session.declare_queryable(station_key(name, "offer"), self._on_offer),
            self.session.declare_queryable(station_key(name, "cmd", "*"), self._on_cmd),
        ]
        self.token = self.session.liveliness().declare_token(station_token(name))

    def _on_offer(self, q) -> None:
        q.reply(q.key_expr, self.offer.encode())

    def _on_cmd(self, q) -> None:
        verb = str(q.key_expr).rsplit("/", 1)[-1]
        body = json.loads(q.payload.to_bytes()) if q.payload is not None else {}
        if verb == "state":
            q.reply(q.key_expr, reply_json({"ok": True, "state": {"belief": {"holding": self.holding}}}))
        elif verb == "reset_block":
            self.holding = False
            self._later(self.fleet.reset_s * self.fleet.time_scale, q, {"ok": True, "outcome": "done"})
        elif verb == "run_trial":
            order = TrialOrder.model_validate(body)
            action = "place" if self.holding else "pick"
            self.holding = not self.holding
            result = TrialResult(
                trial_id=order.trial_id,
                agent=order.agent,
                instruction=order.instruction,
                action=action,
                robot_outcome="done",
                points_px=[[320.0, 240.0]],
                frame_size=(640, 480),
                station=self.name,
            )
            seconds = self.fleet.rng.lognormvariate(0.0, 0.25) * self.fleet.trial_s * self.fleet.time_scale
            result.timings_s = {"total": round(seconds, 4)}
            record = {  # built after the timings: the reply and the delivery are one record
                "station": self.name,
                "slot": order.slot.model_dump(),
                "result": result.model_dump(mode="json"),
                "frames": {"before": self.fleet.jpeg_b64, "after": self.fleet.jpeg_b64},
            }
            self._later(seconds, q, {"ok": True, "record": record}, deliver=record)
        else:
            q.reply(q.key_expr, reply_json({"ok": True}))

    def _later(self, seconds: float, q, out: dict, deliver: dict | None = None) -> None:
        def fire() -> None:
            q.reply(q.key_expr, reply_json(out))
            if deliver is not None:  # the journal's delivery of the same record (the server drops one)
                for _ in self.session.get(f"{RECORDS}/{self.name}", payload=reply_json(deliver), timeout=10):
                    pass

        threading.Timer(seconds, fire).start()

    def close(self) -> None:
        self.token.undeclare()
        self.session.close()


class SimFleet:
    """``n`` simulated stations named ``{prefix}{i:03d}`` connected to ``connect`` (module docstring)."""

    def __init__(
        self,
        n: int,
        *,
        connect: list[str],
        prefix: str = "sim",
        scene: str = "tabletop",
        agents: list[str] | None = None,
        trial_s: float = 25.0,
        reset_s: float = 12.0,
        time_scale: float = 1.0,
        lease_s: float = 3.0,
        seed: int = 0,
    ) -> None:
        self.connect, self.scene, self.lease_s = connect, scene, lease_s
        self.agents = agents or ["sim-oracle", "sim-noisy"]
        self.trial_s, self.reset_s, self.time_scale = trial_s, reset_s, time_scale
        self.rng = random.Random(seed)
        self.jpeg_b64 = b64(cv2.imencode(".jpg", np.full((48, 64, 3), 128, np.uint8))[1].tobytes())
        self.stations = [_SimStation(self, f"{prefix}{i:03d}") for i in range(n)]

    def close(self) -> None:
        for s in self.stations:
            try:
                s.close()
            except Exception as e:
                log.debug("sim station %s close: %s", s.name, e)
