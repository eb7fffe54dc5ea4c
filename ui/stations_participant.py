"""A scripted participant of a study server (``pointlab act server``): the load of ``pointlab perf
stations`` and the stations tests. It does what a participant's page does, over the same JSON API
(``ui.stations_app``): start each block, send instructions, judge every completed motion, fill each
block's questionnaire, and wait (polling) while it is in line for a station.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx

__all__ = ["ScriptedParticipant", "ParticipantLog"]

INSTRUCTIONS = {"pick": "pick up the red cube", "place": "put it in the blue bowl"}
SUS_RESPONSES = [4, 2, 4, 2, 4, 2, 4, 2, 4, 2]


@dataclass
class ParticipantLog:
    """What one scripted participant saw: every trial's blinded reply, its waits and its end."""

    token: str
    trials: list[dict] = field(default_factory=list)
    judged: list[int] = field(default_factory=list)
    surveys: list[int] = field(default_factory=list)
    waits: int = 0
    last_wait: str = ""  # the server's last "not now" (409) reason
    finished: bool = False
    block_latency_s: list[float] = field(default_factory=list)  # block request -> its station reset
    trial_s: list[float] = field(default_factory=list)  # instruction sent -> blinded reply
    errors: list[str] = field(default_factory=list)


class ScriptedParticipant:
    """One participant (invite ``token``) against the server at ``base_url``.

    Args:
        poll_s: seconds between polls while waiting for a station.
        deadline_s: give up (``finished`` stays False) after this long.
    """

    def __init__(self, base_url: str, token: str, *, poll_s: float = 0.2, deadline_s: float = 600.0) -> None:
        self.base, self.token, self.poll_s, self.deadline_s = base_url.rstrip("/"), token, poll_s, deadline_s
        self.log = ParticipantLog(token)

    async def run(self) -> ParticipantLog:
        url = f"{self.base}/api/p/{self.token}"
        end = time.monotonic() + self.deadline_s
        async with httpx.AsyncClient(timeout=httpx.Timeout(700.0, connect=10.0)) as http:
            while time.monotonic() < end:
                state = (await http.get(url)).json()
                kind = state["step"]["kind"]
                if kind == "done":
                    self.log.finished = True
                    break
                if kind == "setup":
                    t0 = time.monotonic()
                    r = await http.post(f"{url}/block")
                    if r.status_code == 200:
                        self.log.block_latency_s.append(time.monotonic() - t0)
                elif kind == "trial":
                    t0 = time.monotonic()
                    r = await http.post(f"{url}/trial", json={"instruction": INSTRUCTIONS[self._next_action()]})
                    if r.status_code == 200:
                        self.log.trial_s.append(time.monotonic() - t0)
                        self.log.trials.append(r.json())
                elif kind == "judge":
                    pending = state["pending_trial"]
                    r = await http.post(
                        f"{url}/judge", json={"trial_id": pending["trial_id"], "judgement": "succeeded"}
                    )
                    if r.status_code == 200:
                        self.log.judged.append(pending["trial_id"])
                elif kind == "sus":
                    block = state["step"]["block"]
                    r = await http.post(f"{url}/sus", json={"block": block, "responses": SUS_RESPONSES})
                    if r.status_code == 200:
                        self.log.surveys.append(block)
                else:
                    r = None
                if r is not None and r.status_code == 409:  # waiting in line, or the station went away
                    self.log.waits += 1
                    self.log.last_wait = r.json().get("detail", "")
                    await asyncio.sleep(self.poll_s)
                elif r is not None and r.status_code != 200:
                    self.log.errors.append(f"{r.status_code}: {r.text[:200]}")
                    await asyncio.sleep(self.poll_s)
        return self.log

    def _next_action(self) -> str:
        """``place`` right after a completed pick of this block (the arm holds it), else ``pick``."""
        last = self.log.trials[-1] if self.log.trials else None
        if last and last["action"] == "pick" and last["outcome"] == "done":
            return "place"
        return "pick"
