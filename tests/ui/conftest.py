"""Fixtures of the web-page tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where a browser test saves its screenshots: the test's temp folder, or the folder named by
    ``POINTLAB_SCREENSHOTS`` (``POINTLAB_SCREENSHOTS=docs/img`` refreshes the documentation's
    images), so a test run changes no file of the checkout."""
    d = Path(os.environ["POINTLAB_SCREENSHOTS"]) if os.environ.get("POINTLAB_SCREENSHOTS") else tmp_path / "shots"
    d.mkdir(parents=True, exist_ok=True)
    return d
