"""Serving an ASGI app from a background thread on a loopback port (uvicorn), for the local servers
that run beside a session or a test: the sim model server (``sim_mock.model_server``) and the web app
of ``pointlab perf loop --browsers`` (``ui.perf_live``)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Literal, Callable

__all__ = ["bind_socket", "serve_in_thread", "WS_PER_MESSAGE_DEFLATE"]


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening-ready TCP socket bound to ``host:port`` (port 0: a free port chosen by the OS).

    Raises:
        OSError: the port is taken or out of range (0-65535), or the host is not local.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OverflowError as e:  # socket raises OverflowError, not OSError, for a port outside 0-65535
        sock.close()
        raise OSError(f"port must be 0-65535, got {port}") from e
    except OSError:
        sock.close()
        raise
    return sock


# Websocket permessage-deflate off: what our websockets carry in bulk is the live view's JPEG, which
# deflate cannot shrink, and compressing it costs each page's share of the server's CPU and the
# browser's inflate (measured by ``pointlab perf loop --browsers 5``, docs/simulation.md).
WS_PER_MESSAGE_DEFLATE = False


def serve_in_thread(
    app,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    start_timeout_s: float = 10.0,
    lifespan: Literal["auto", "on", "off"] = "off",
) -> tuple[str, Callable[[], None]]:
    """Run ``app`` with uvicorn in a daemon thread (``lifespan``: uvicorn's setting; ``"on"`` runs the
    app's startup and shutdown, which the study server's app needs).

    Returns:
        ``(base_url, stop)``: ``base_url`` is ``http://HOST:PORT/v1`` with the actual port; ``stop()``
        shuts the server down and joins the thread (idempotent).

    Raises:
        OSError: the port cannot be bound.
        RuntimeError: the server did not start within ``start_timeout_s``.
    """
    import uvicorn

    sock = bind_socket(host, port)
    actual = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            app, log_level="warning", lifespan=lifespan, access_log=False, ws_per_message_deflate=WS_PER_MESSAGE_DEFLATE
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"model-server:{actual}", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"model server on {host}:{actual} did not start")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10.0)
        sock.close()

    return f"http://{host}:{actual}/v1", stop
