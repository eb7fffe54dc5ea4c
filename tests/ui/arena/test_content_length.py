"""The arena's body-size guard refuses a POST by its Content-Length before the body is read, and
lets everything else through untouched."""

from __future__ import annotations

import asyncio

from pointlab.ui.arena.app import ContentLengthLimit


def _call(method: str, headers: list[tuple[bytes, bytes]]):
    calls, sent, reads = [], [], []

    async def inner(scope, receive, send):
        calls.append(scope["method"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive():
        reads.append(1)
        return {"type": "http.request", "body": b"x", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "headers": headers, "path": "/api/battles"}
    asyncio.run(ContentLengthLimit(inner, limit=1000)(scope, receive, send))
    return calls, sent[0]["status"], reads, sent


def test_a_post_over_the_limit_is_413_unread():
    calls, status, reads, sent = _call("POST", [(b"content-length", b"1001")])
    assert status == 413 and calls == [] and reads == []
    assert b"request body is 1001 bytes, limit 1000" in b"".join(m.get("body", b"") for m in sent)


def test_everything_else_passes():
    assert _call("POST", [(b"content-length", b"1000")])[:2] == (["POST"], 204)  # at the limit
    assert _call("POST", [])[:2] == (["POST"], 204)  # chunked: the decoder's byte limit applies
    assert _call("GET", [(b"content-length", b"99999")])[:2] == (["GET"], 204)
