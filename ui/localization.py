"""The human localization study page of PinpointQA (App. D.1), a small FastAPI app of its own.

Participants see the question and (depending on the setting) a spatial description, press Start
(which reveals the frames and starts the clock), pick the frame where the target appears, click
its location, and save. Each response ``{"id", "participant", "setting", "frame_index", "x", "y",
"elapsed_s", "saved_at"}`` (x, y normalized by the image width and height) is appended to a JSONL
file that ``pointlab score localization --pred`` reads directly.

Settings (App. D.1): ``unguided`` (no description), ``gt`` (the ground-truth FSD text of the
sample) and ``model`` (a model's FSD text from an optional ``{"id", "prediction"}`` JSONL).
Samples use the released ``demo_samples.json`` shape: ``id``, ``title``, ``target``, ``question``,
``instruction``, ``frames`` (paths), ``ground_truth_text``, ``ground_truth`` {frame_index, x, y}.
Frame paths are resolved against the samples file's folder (also with leading folders dropped,
since the released file names them under ``assets/human_assist_demo/``); a sample whose frames are
missing is left out and listed by ``GET /api/samples`` under ``unavailable``.
"""

from __future__ import annotations

import importlib.resources
import json
import threading
import time
from pathlib import Path

from fastapi import APIRouter, FastAPI, HTTPException
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from pointlab.ui.errors import UiError

__all__ = ["LOCALIZATION_SETTINGS", "LocalizationStudy", "StudyDataError", "create_localization_app", "load_samples"]

LOCALIZATION_SETTINGS = ("unguided", "model", "gt")


class StudyDataError(UiError, ValueError):
    """The samples file (or the model-description file) is missing or malformed."""


class Response(BaseModel):
    """One saved answer; x and y normalized to [0, 1]."""

    id: str = Field(min_length=1, max_length=200)
    participant: str = Field(default="anonymous", min_length=1, max_length=100)
    setting: str = Field(pattern="^(unguided|model|gt)$")
    frame_index: int = Field(ge=0)
    x: float = Field(ge=0.0, le=1.0)
    y: float = Field(ge=0.0, le=1.0)
    elapsed_s: float = Field(ge=0.0, le=86400.0)


def _resolve(base: Path, rel: str) -> Path | None:
    parts = Path(rel).parts
    for k in range(len(parts)):
        cand = (base / Path(*parts[k:])).resolve()
        if cand.is_file() and base.resolve() in cand.parents:
            return cand
    return None


def load_samples(path: Path) -> tuple[list[dict], list[str]]:
    """Samples with resolved frame files, and the ids left out because a frame is missing.

    Raises:
        StudyDataError: unreadable JSON, not a list, or a sample without id / frames / ground truth.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise StudyDataError(f"{path}: cannot read samples: {e}") from e
    if not isinstance(data, list):
        raise StudyDataError(f"{path}: expected a JSON list of samples")
    base = Path(path).parent
    samples, unavailable = [], []
    for k, s in enumerate(data):
        try:
            sid, frames, gt = str(s["id"]), list(s["frames"]), s["ground_truth"]
            gt = {"frame_index": int(gt["frame_index"]), "x": float(gt["x"]), "y": float(gt["y"])}
        except (KeyError, TypeError, ValueError) as e:
            raise StudyDataError(f"{path}: sample {k} lacks id, frames or ground_truth ({e!r})") from e
        files = [_resolve(base, f) for f in frames]
        if not files or any(f is None for f in files):
            unavailable.append(sid)
            continue
        samples.append({**s, "id": sid, "ground_truth": gt, "_files": files})
    return samples, unavailable


class LocalizationStudy:
    """The study's data: samples, optional model descriptions, and the responses file (appended
    under a lock, one JSON line per save)."""

    def __init__(self, samples_path: Path, responses_path: Path, model_fsd_path: Path | None = None) -> None:
        self.samples, self.unavailable = load_samples(samples_path)
        self.by_id = {s["id"]: s for s in self.samples}
        self.responses_path = Path(responses_path)
        self.model_fsd: dict[str, str] = {}
        if model_fsd_path is not None:
            try:
                for line in Path(model_fsd_path).read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        row = json.loads(line)
                        self.model_fsd[str(row["id"])] = str(row["prediction"])
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
                raise StudyDataError(f"{model_fsd_path}: cannot read model descriptions: {e}") from e
        self._lock = threading.Lock()

    def public(self, setting: str) -> dict:
        """What the page may show: never the ground-truth location."""
        out = []
        for s in self.samples:
            guidance = {
                "gt": s.get("ground_truth_text") or "",
                "model": self.model_fsd.get(s["id"], ""),
                "unguided": "",
            }[setting]
            out.append(
                {
                    "id": s["id"],
                    "title": s.get("title", s["id"]),
                    "target": s.get("target", ""),
                    "question": s.get("question", ""),
                    "instruction": s.get("instruction", ""),
                    "guidance": guidance,
                    "frames": [f"/frames/{s['id']}/{k}" for k in range(len(s["_files"]))],
                }
            )
        return {"setting": setting, "samples": out, "unavailable": self.unavailable}

    def save(self, r: Response) -> dict:
        sample = self.by_id.get(r.id)
        if sample is None:
            raise KeyError(r.id)
        if r.frame_index >= len(sample["_files"]):
            raise IndexError(r.frame_index)
        row = {**r.model_dump(), "saved_at": time.time()}
        with self._lock:
            self.responses_path.parent.mkdir(parents=True, exist_ok=True)
            with self.responses_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        return row


def _router(study: LocalizationStudy, default_setting: str) -> APIRouter:
    router = APIRouter()
    static = importlib.resources.files("pointlab.ui") / "static"

    @router.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(static / "localization.html"))

    @router.get("/api/samples")
    def samples(setting: str | None = None) -> dict:
        chosen = setting or default_setting
        if chosen not in LOCALIZATION_SETTINGS:
            raise HTTPException(400, f"setting must be one of {', '.join(LOCALIZATION_SETTINGS)}")
        return study.public(chosen)

    @router.get("/frames/{sample_id}/{k}", include_in_schema=False)
    def frame(sample_id: str, k: int) -> FileResponse:
        s = study.by_id.get(sample_id)
        if s is None or not 0 <= k < len(s["_files"]):
            raise HTTPException(404, "no such frame")
        return FileResponse(str(s["_files"][k]))

    @router.post("/api/responses")
    def save(r: Response) -> dict:
        try:
            study.save(r)
        except KeyError:
            raise HTTPException(404, f"unknown sample {r.id!r}") from None
        except IndexError:
            raise HTTPException(422, f"frame_index {r.frame_index} is out of range") from None
        return {"saved": True}

    return router


def create_localization_app(
    samples_path: Path, responses_path: Path, *, setting: str = "gt", model_fsd_path: Path | None = None
) -> FastAPI:
    """Build the study app (serve it with uvicorn on 127.0.0.1).

    Raises:
        StudyDataError: unreadable samples / model descriptions.
        ValueError: unknown setting.
    """
    if setting not in LOCALIZATION_SETTINGS:
        raise ValueError(f"setting must be one of {', '.join(LOCALIZATION_SETTINGS)}, got {setting!r}")
    study = LocalizationStudy(Path(samples_path), Path(responses_path), model_fsd_path)
    app = FastAPI(title="PinpointQA localization study", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.study = study
    app.include_router(_router(study, setting))
    app.mount("/static", StaticFiles(directory=str(importlib.resources.files("pointlab.ui") / "static")), name="static")
    return app
