"""Which participant runs on which station: the study server's dispatch rule (pure, no I/O).

docs/stations.md, "Dispatch": a participant's agent block runs on one station that offers the study's
scene; one participant per station at a time, held from the block's scene reset until its
questionnaire is in (the participant judges what that station's arm did); participants wait in one
first-come line; a station that goes offline drops its participant, who goes back to the **front**
of the line and continues on the next free station (after that station's reference-scene reset).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["StationStatus", "StationView", "Dispatcher"]

StationStatus = Literal["idle", "resetting", "in_trial", "offline"]


@dataclass
class StationView:
    """What the server knows of one station (the console's row)."""

    name: str
    scene: str = ""
    offer: dict = field(default_factory=dict)
    status: StationStatus = "offline"
    participant_id: int | None = None
    trials: int = 0
    lost: int = 0  # times it went offline


class Dispatcher:
    """Stations, the waiting line and who holds which station. Used from one thread (the server's loop)."""

    def __init__(self) -> None:
        self.stations: dict[str, StationView] = {}
        self.waiting: list[tuple[int, str]] = []  # (participant id, scene), first come first served
        self.held: dict[int, str] = {}  # participant id -> station name

    # -- stations ---------------------------------------------------------------------------------
    def station_up(self, name: str, offer: dict) -> None:
        v = self.stations.setdefault(name, StationView(name))
        v.offer, v.scene = offer, str(offer.get("scene", ""))
        if v.status == "offline":
            v.status = "idle"

    def station_down(self, name: str) -> int | None:
        """Mark ``name`` offline; returns the participant it held (put back at the front of the line)."""
        v = self.stations.get(name)
        if v is None or v.status == "offline":
            return None
        v.status, v.lost = "offline", v.lost + 1
        pid = v.participant_id
        v.participant_id = None
        if pid is not None:
            self.held.pop(pid, None)
            self.waiting.insert(0, (pid, v.scene))
        return pid

    def set_status(self, name: str, status: StationStatus) -> None:
        v = self.stations.get(name)
        if v is not None and v.status != "offline":
            v.status = status

    # -- participants -----------------------------------------------------------------------------
    def station_of(self, pid: int) -> str | None:
        return self.held.get(pid)

    def request(self, pid: int, scene: str) -> str | None:
        """The station ``pid`` holds, else one given now (when ``pid`` is first in line for a free
        station of ``scene``), else ``None`` (``pid`` is in the line: ``position``)."""
        if pid in self.held:
            return self.held[pid]
        if all(p != pid for p, _ in self.waiting):
            self.waiting.append((pid, scene))
        self.assign()
        return self.held.get(pid)

    def assign(self) -> None:
        """Give free stations to the first in line who wait for their scene."""
        for pid, scene in list(self.waiting):
            free = next(
                (
                    v
                    for v in sorted(self.stations.values(), key=lambda v: v.name)
                    if v.status == "idle" and v.participant_id is None and v.scene == scene
                ),
                None,
            )
            if free is None:
                continue  # a later participant may want another scene
            free.participant_id = pid
            self.held[pid] = free.name
            self.waiting.remove((pid, scene))

    def release(self, pid: int) -> None:
        """``pid`` is done with its station (its block's questionnaire is in, or it left)."""
        name = self.held.pop(pid, None)
        if name is not None and name in self.stations:
            self.stations[name].participant_id = None
        self.waiting = [(p, s) for p, s in self.waiting if p != pid]
        self.assign()

    def position(self, pid: int) -> int | None:
        """0-based place in the line, ``None`` when not waiting."""
        return next((i for i, (p, _) in enumerate(self.waiting) if p == pid), None)
