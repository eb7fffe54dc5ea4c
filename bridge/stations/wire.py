"""What crosses Zenoh between the study server and its stations: key expressions, payloads, sessions.

Key space (docs/stations.md, "Key space"); ``NAME`` is a station's name:

=====================================  =========  ===================================================
key expression                         kind       what
=====================================  =========  ===================================================
``pointlab/server``                    liveliness  the study server is up (a station halts its arm
                                                  when this token goes: it lost the server)
``pointlab/server/records``            queryable  a station delivers one finished trial; the reply
                                                  is the server's acknowledgement (after the commit)
``pointlab/station/NAME``              liveliness  the station is up (a server restarted finds its
                                                  stations by this token's history)
``pointlab/station/NAME/offer``        queryable  what the station offers (``Offer``)
``pointlab/station/NAME/cmd/VERB``     queryable  a command (``VERBS``) and its result
``pointlab/station/NAME/live``         pub/sub    the live view's JPEG frames
=====================================  =========  ===================================================

Payloads are JSON (pydantic models below); a frame is raw JPEG bytes. A malformed payload is
answered with ``{"ok": false, "error": ...}`` and changes nothing.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pointlab.benchmark.records import dumps_json
from pointlab.bridge.errors import BridgeError

__all__ = [
    "SERVER_TOKEN",
    "RECORDS",
    "FILES",
    "VERBS",
    "NAME_RE",
    "ENDPOINT_RE",
    "StationsError",
    "Offer",
    "TrialOrder",
    "TrialRecord",
    "station_token",
    "station_key",
    "name_of",
    "check_name",
    "b64",
    "unb64",
    "reply_json",
    "zenoh_config",
]

SERVER_TOKEN = "pointlab/server"
RECORDS = "pointlab/server/records"
FILES = "pointlab/server/files"  # a station's recording files (bridge.stations.recordings)
STATION_ROOT = "pointlab/station"
# reset_block: the block's reference-scene reset; run_trial: one trial (its reply is the record)
VERBS = (
    "run_trial",
    "reset_block",
    "estop",
    "reset",
    "home",
    "abort",
    "state",
    "human_pending",
    "human_answer",
    "human_decline",
)
# one key chunk: no "/", no Zenoh wildcards ("*", "$*", "**"), no "?" or "#" (selectors)
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# a Zenoh locator with its port: tcp/HOST:PORT, tls/HOST:PORT, [IPv6]:PORT too
ENDPOINT_RE = re.compile(r"^(tcp|tls|quic|udp)/(\[[0-9A-Fa-f:.]+\]|[^/:\s]+):\d{1,5}$")


class StationsError(BridgeError):
    """A server or station part cannot start or a peer answered wrongly (the message says which)."""


def check_name(name: str) -> str:
    """``name`` when it is a valid station name (``NAME_RE``); raises ``StationsError`` otherwise."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise StationsError(f"station name {name!r} must match {NAME_RE.pattern} (one Zenoh key chunk)")
    return name


def station_token(name: str) -> str:
    return f"{STATION_ROOT}/{check_name(name)}"


def station_key(name: str, *rest: str) -> str:
    return "/".join([station_token(name), *rest])


def name_of(key: str) -> str | None:
    """The station name of a key under ``pointlab/station/NAME``; ``None`` for any other key."""
    parts = str(key).split("/")
    if len(parts) < 3 or "/".join(parts[:2]) != STATION_ROOT or not NAME_RE.match(parts[2]):
        return None
    return parts[2]


class Offer(BaseModel):
    """What a station offers a study (its answer to ``.../offer``).

    Attributes:
        name: the station's name.
        scene: the scene it can set up (a study runs on stations whose scene is the study's).
        arm: the arm spec kind (``sim``, ``xarm``); camera: the camera spec kind (``sim``, ``realsense``...).
        sim: the arm and the camera are simulated.
        agents: the agent names its agents config holds.
        calibration: where its ``T_base_camera`` came from (a file's sha256, or ``sim-exact``).
        automatic_reset: the scene is restored exactly by a simulator (else an operator confirms it).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    scene: str
    arm: str
    camera: str
    sim: bool
    agents: list[str]
    calibration: str = ""
    automatic_reset: bool = False


class SlotModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    study_id: int
    participant_id: int
    block: int = Field(ge=0)


class TrialOrder(BaseModel):
    """``cmd/run_trial``: run one trial named ``trial_id`` in ``slot``.

    ``reveal_low_s``/``reveal_high_s`` and ``min_free_mb`` are the study's (``Store.study``)."""

    model_config = ConfigDict(extra="forbid")

    trial_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    agent: str
    instruction: str = Field(min_length=1, max_length=2000)
    slot: SlotModel
    reveal_low_s: float = Field(ge=0, le=300, allow_inf_nan=False)
    reveal_high_s: float = Field(ge=0, le=300, allow_inf_nan=False)
    min_free_mb: int | None = Field(None, ge=0)


class TrialRecord(BaseModel):
    """One finished trial as a station delivers it (``pointlab/server/records``; also the reply of
    ``cmd/run_trial``).

    Attributes:
        station: who ran it (the server refuses a record whose station is not the sender's name).
        slot: where it belongs in the study.
        result: the ``TrialResult`` as JSON values.
        frames: ``{"before"|"after": base64 JPEG}``.
    """

    model_config = ConfigDict(extra="forbid")

    station: str
    slot: SlotModel
    result: dict[str, Any]
    frames: dict[Literal["before", "after"], str] = Field(default_factory=dict)

    @field_validator("result")
    @classmethod
    def _has_id(cls, v: dict) -> dict:
        if not isinstance(v.get("trial_id"), str):
            raise ValueError("result has no trial_id")
        return v


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def reply_json(obj: Any) -> bytes:
    """A payload's bytes: the project's strict JSON (``benchmark.records.dumps_json``: a non-finite
    number is ``null``, as the store writes it), UTF-8."""
    return dumps_json(obj, compact=True).encode()


def zenoh_config(
    *,
    mode: Literal["router", "peer", "client"],
    listen: list[str] | None = None,
    connect: list[str] | None = None,
    lease_s: float = 3.0,
    user: str | None = None,
    password: str | None = None,
    credentials_file: str | None = None,
    tls: dict[str, str] | None = None,
    acl: dict | None = None,
    connect_timeout_s: float | None = None,
):
    """A ``zenoh.Config``: no multicast scouting (stations find the server by its endpoint only),
    the transport lease (a peer gone without closing, a cut cable, is noticed within about this time),
    and the documented deployment's security (docs/stations.md "Security"): ``user``/``password``
    (a station's credentials), ``credentials_file`` (the server's ``user:password`` lines), ``tls``
    (``root_ca_certificate``, ``listen_certificate``, ``listen_private_key``... as Zenoh names them),
    ``acl`` (Zenoh's ``access_control`` block). ``connect_timeout_s``: a client gives up opening after
    this long (wrong credentials, no server; ``zenoh.open`` raises) instead of retrying forever; once
    connected it reconnects on its own whatever this is.

    Raises:
        StationsError: Zenoh refused a value.
    """
    import zenoh

    c = zenoh.Config()
    try:
        c.insert_json5("mode", json.dumps(mode))
        c.insert_json5("scouting/multicast/enabled", "false")
        c.insert_json5("scouting/gossip/enabled", "false")
        if listen:
            c.insert_json5("listen/endpoints", json.dumps(listen))
        if connect:
            c.insert_json5("connect/endpoints", json.dumps(connect))
            if connect_timeout_s is None:
                # keep trying: a station started before its server connects when it can
                c.insert_json5("connect/timeout_ms", "-1")
                c.insert_json5("connect/exit_on_failure", "false")
            else:
                c.insert_json5("connect/timeout_ms", str(int(connect_timeout_s * 1000)))
                c.insert_json5("connect/exit_on_failure", "true")
        c.insert_json5("transport/link/tx/lease", str(int(lease_s * 1000)))
        c.insert_json5("transport/link/tx/keep_alive", "4")
        if user is not None:
            c.insert_json5("transport/auth/usrpwd/user", json.dumps(user))
            c.insert_json5("transport/auth/usrpwd/password", json.dumps(password or ""))
        if credentials_file is not None:
            c.insert_json5("transport/auth/usrpwd/dictionary_file", json.dumps(credentials_file))
        if tls:
            for k, v in tls.items():
                c.insert_json5(f"transport/link/tls/{k}", json.dumps(v))
        if acl is not None:
            c.insert_json5("access_control", json.dumps(acl))
    except Exception as e:  # zenoh.ZError: a value Zenoh does not take
        raise StationsError(f"Zenoh configuration refused: {e}") from e
    return c
