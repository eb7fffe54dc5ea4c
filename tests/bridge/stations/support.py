"""What the stations' tests share: a free port, a wait on a condition, and a TCP relay that counts
connection attempts and cuts the network."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

from pointlab.ui.serve import free_port

__all__ = ["Relay", "ThreadLoop", "free_port", "wait_for"]


def wait_for(cond, deadline_s: float, what: str):
    """``cond()``'s first truthy value, polled every 20 ms; AssertionError naming ``what`` after
    ``deadline_s`` seconds."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if got := cond():
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out after {deadline_s:.0f} s waiting for {what}")


class Relay:
    """A TCP relay on 127.0.0.1 to the port ``upstream`` that counts the connections it accepts: each
    is one attempt of a Zenoh client to open its transport. ``upstream`` may be changed at any time
    (the next connection goes there). ``cut()`` is a network cut: nothing is forwarded any more and
    no socket is closed (as a pulled cable: neither side sees a FIN or a reset), new connections
    are held and never answered; ``heal()`` forwards new connections again."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.accepted = 0
        self.is_cut = False
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._srv = socket.create_server(("127.0.0.1", 0))
        self._srv.settimeout(0.1)
        self.endpoint = f"tcp/127.0.0.1:{self._srv.getsockname()[1]}"
        threading.Thread(target=self._serve, name="relay", daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                down, _ = self._srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            if self.is_cut:  # held, never answered: the client's handshake times out
                self._socks.append(down)
                continue
            try:
                up = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
            except OSError:
                down.close()
                continue
            down.settimeout(None)
            up.settimeout(None)
            self._socks += [down, up]
            threading.Thread(target=self._pump, args=(down, up), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                if not self.is_cut:  # after a cut the bytes go nowhere and the sockets stay open
                    b.sendall(data)
        except OSError:
            pass
        if self.is_cut:  # a cut closes nothing
            return
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        self.is_cut = True

    def heal(self) -> None:
        self.is_cut = False

    def close(self) -> None:
        self._stop.set()
        self._srv.close()
        for s in self._socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


class ThreadLoop:
    """An asyncio loop in a thread (a study server's, as uvicorn's would be)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
