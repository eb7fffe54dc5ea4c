"""The annotation API's authentication: ``Authorization: Bearer <token>`` only (the scheme is
case-insensitive, RFC 7235 sec. 2.1); a bare token, another scheme or an unknown token is 401 with
``WWW-Authenticate: Bearer``. Over real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from PIL import Image

from pointlab.benchmark.pointbench.annotation import AnnotationStore
from pointlab.sim_mock.model_server import serve_in_thread
from pointlab.ui.annotate import create_annotate_app

TOKEN = "alice-token-123"


@pytest.fixture
def base(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(images / "a.png")
    store = AnnotationStore(tmp_path / "bench")
    store.add_folder(images)
    url, stop = serve_in_thread(create_annotate_app(store, {}, {TOKEN: "alice", "bob-token-4567": "bob"}))
    yield url.removesuffix("/v1")
    stop()


@pytest.mark.parametrize(
    "header, status",
    [
        (f"Bearer {TOKEN}", 200),
        (f"bearer {TOKEN}", 200),
        (f"BEARER  {TOKEN}", 200),
        (TOKEN, 401),
        (f"Basic {TOKEN}", 401),
        ("Bearer wrong-token-999", 401),
        ("Bearer", 401),
        ("", 401),
    ],
)
def test_only_a_bearer_token_is_accepted(base, header, status):
    r = httpx.get(f"{base}/api/items", headers={"Authorization": header} if header else {}, timeout=30)
    assert r.status_code == status, (header, r.status_code, r.text)
    if status == 401:
        assert r.headers.get("www-authenticate") == "Bearer"
