"""Arena test setup: two real OpenAI-protocol agents against the sim model server, curated images."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pointlab.benchmark.agents_config import AgentConfig, build_agent
from pointlab.sim_mock.model_server import Model, ScriptedModel, create_model_server, serve_in_thread

# Distinctive names: a leak is a plain substring search away.
NAME_A, NAME_B = "zebrafinch-vl-7b", "quokkaview-pro"
ANSWERS = {NAME_A: "[120, 90]", NAME_B: "[400, 300]"}


def start_models(tmp: Path):
    """``(agents {name: Agent}, stop)``: each model answers every request with its fixed point."""
    models: dict[str, Model] = {}
    for name, ans in ANSWERS.items():
        script = tmp / f"{name}.jsonl"
        script.write_text(json.dumps({"match": "Point", "answer": ans}) + "\n")
        models[name] = ScriptedModel(script)
    url, stop = serve_in_thread(create_model_server(models))
    agents = {
        n: build_agent(
            AgentConfig(
                name=n,
                kind="openai",
                base_url=url,
                model=n,
                point_format="xy_pixels",
                image_encoding="png",
                max_retries=0,
            )
        )
        for n in ANSWERS
    }
    return agents, stop


def curated(tabletop: Path, tmp: Path) -> Path:
    d = tmp / "curated"
    d.mkdir(exist_ok=True)
    for f in ("000000-color.png", "000004-color.png"):
        shutil.copyfile(tabletop / f, d / f)
    return d


def new_battle(store, sid: str, **kw) -> str:
    """A battle of session ``sid`` on a 4 x 4 curated image between ``m1`` and ``m2``; ``kw`` overrides
    or adds ``ArenaStore.create_battle`` arguments (``client_addr``, ``rate_limits``)."""
    args = dict(
        session_id=sid,
        image_sha256="0" * 64,
        image_path="x.png",
        image_source="curated",
        width=4,
        height=4,
        instruction="Point",
        model_a="m1",
        model_b="m2",
        sampler="uniform",
    )
    return store.create_battle(**{**args, **kw})
