"""Serving a web app from a CLI command: check the port first, print where it is, run uvicorn.

The port is checked before anything else starts (a session, a model server), so that a taken port
is a one-line error instead of a URL printed for somebody else's server.
"""

from __future__ import annotations

import socket

import typer

from pointlab.benchmark.clikit import fail
from pointlab.benchmark.serving import WS_PER_MESSAGE_DEFLATE

__all__ = ["check_port", "serve", "public_url", "KEEP_ALIVE_S"]

# Idle keep-alive connections live longer on the server than on clients (browsers and proxies close
# theirs after about 60 s), so it is the client that closes one: with uvicorn's default of 5 s a
# client reusing a connection at the moment the server drops it gets a transport error (seen under
# load in the arena's 50-voter test as httpx ReadError on a vote).
KEEP_ALIVE_S = 75


def check_port(host: str, port: int) -> None:
    """Exit with a one-line error (code 2) when ``host:port`` cannot be bound."""
    if not 0 <= port <= 65535:
        fail(f"port {port} is not in 0-65535")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            fail(f"cannot listen on {host}:{port} ({e.strerror or e}); choose another --port")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the perf commands' servers; another process may take it
    before it is bound, which their start-up then reports)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def public_url(host: str, port: int) -> str:
    """The URL to print for a server bound to ``host:port`` (a wildcard address prints 127.0.0.1)."""
    url_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{url_host}:{port}"


def serve(app, host: str, port: int, banner: list[str], *, proxy_headers: bool = True) -> None:
    """Print ``banner`` (one line each, stdout) and run ``app`` with uvicorn until Ctrl-C.

    ``proxy_headers=False`` turns off uvicorn's default trust of ``X-Forwarded-For`` from
    127.0.0.1 (an app that rate-limits per client address decides itself whom to trust)."""
    import uvicorn

    for line in banner:
        typer.echo(line)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=proxy_headers,
        timeout_keep_alive=KEEP_ALIVE_S,
        ws_per_message_deflate=WS_PER_MESSAGE_DEFLATE,
    )
