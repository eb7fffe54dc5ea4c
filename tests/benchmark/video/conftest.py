"""Fixtures of the video tests: the real ARKitScenes frames and their hand-made visibility table."""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def arkit_frames(shared_data: Path) -> Path:
    p = shared_data / "scenes" / "arkitscenes_47334096_frames"
    if not p.is_dir():
        pytest.skip(f"{p} is absent")
    return p


@pytest.fixture(scope="session")
def arkit_visibility() -> Path:
    return DATA / "arkitscenes_47334096_visibility.json"


@pytest.fixture(scope="session")
def vsibench_meta(shared_data: Path) -> Path:
    p = shared_data / "scenes" / "vsibench_meta"
    if not p.is_dir():
        pytest.skip(f"{p} is absent")
    return p
