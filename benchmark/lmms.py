"""lmms-eval interoperability: its per-sample logs read as predictions (and ground truth), and our
scores written in its results form, so a lab puts pointlab's numbers beside an lmms-eval run.

Sample logs (``<date>_samples_<task>.jsonl``, ``lmms_eval/evaluator.py`` at 75571cfe): one JSON object per
document, ``{"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "doc_hash", <metrics>}``;
``doc`` holds the dataset row (its multimodal fields dropped), ``filtered_resps[0]`` the text
``process_results`` saw (reasoning tags stripped), ``resps[0]`` the raw generation.

Results form (``<date>_results.json``): ``{"results": {task: {"alias": task, "<metric>,none": value,
"<metric>_stderr,none": "N/A"}}, "versions", "n-samples", "higher_is_better", "config"}``; pointlab adds
``"pointlab": {"rules", "scorer"}`` under ``config`` so the rule set travels with the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from .records import Predictions, RecordError, dumps_json, json_error_text, read_jsonl_lenient

__all__ = [
    "is_samples_log",
    "sample_text",
    "read_samples_log",
    "samples_predictions",
    "samples_ground_truth",
    "results_form",
    "write_results",
]


def is_samples_log(records: Iterable[tuple[str, dict]] | Iterable[dict]) -> bool:
    """The first record looks like an lmms-eval sample (``doc`` and ``filtered_resps`` or ``resps``)."""
    for rec in records:
        rec = rec[1] if isinstance(rec, tuple) else rec
        return (
            isinstance(rec, dict) and isinstance(rec.get("doc"), dict) and ("filtered_resps" in rec or "resps" in rec)
        )
    return False


def _first_text(v: Any) -> str | None:
    while isinstance(v, list) and v:
        v = v[0]
    return v if isinstance(v, str) else None


def sample_text(rec: Mapping[str, Any]) -> str | None:
    """The answer text of one sample: ``filtered_resps[0]`` (what lmms-eval scored), else ``resps[0][0]``."""
    text = _first_text(rec.get("filtered_resps"))
    return text if text is not None else _first_text(rec.get("resps"))


def read_samples_log(path: str | Path) -> tuple[list[tuple[str, dict]], list[str]]:
    """``(samples as (where, record), unreadable lines)`` of a sample log.

    Raises:
        RecordError: unreadable file, or its first readable line is not an lmms-eval sample.
    """
    good, bad = read_jsonl_lenient(path)
    if good and not is_samples_log(good):
        raise RecordError(f"{path}: not an lmms-eval sample log (no 'doc' and 'filtered_resps')")
    return good, bad


def samples_ground_truth(samples: Iterable[tuple[str, dict]]) -> list[dict]:
    """The ``doc`` of every sample (VSI-Bench / ReVSI rows carry their ground truth), ``id`` set to the
    doc's ``id``, else its ``question_id``, else ``doc_id``."""
    out = []
    for _, rec in samples:
        doc = dict(rec["doc"])
        doc.setdefault("id", doc.get("question_id", rec.get("doc_id")))
        out.append(doc)
    return out


def samples_predictions(
    samples: Iterable[tuple[str, dict]], key: Any = None, unreadable: Iterable[str] = ()
) -> Predictions:
    """``Predictions`` ``{id: text}`` from samples; ``key(rec)`` gives the id (default as
    ``samples_ground_truth``)."""
    out = Predictions()
    out.unreadable.extend(unreadable)
    seen: dict[str, str] = {}
    for where, rec in samples:
        doc = rec.get("doc") or {}
        k = key(rec) if key else doc.get("id", doc.get("question_id", rec.get("doc_id")))
        if k is None:
            out.unreadable.append(f"{where}: no id in the sample")
            continue
        k = str(k)
        if k in seen:
            out.problems[k] = f"duplicate sample for {k!r} ({seen[k]} and {where})"
            out.pop(k, None)
            continue
        seen[k] = where
        out[k] = sample_text(rec)
    return out


def results_form(
    task: str, metrics: Mapping[str, float | None], *, n: int, rules: str, scorer: str, version: Any = "pointlab"
) -> dict[str, Any]:
    """lmms-eval's results JSON for one task (module docstring)."""
    res: dict[str, Any] = {"alias": task}
    for name, value in metrics.items():
        res[f"{name},none"] = value
        res[f"{name}_stderr,none"] = "N/A"
    return {
        "results": {task: res},
        "group_subtasks": {task: []},
        "configs": {task: {"task": task}},
        "versions": {task: version},
        "n-shot": {task: 0},
        "higher_is_better": {task: {name: True for name in metrics}},
        "n-samples": {task: {"original": n, "effective": n}},
        "config": {"model": "pointlab score", "pointlab": {"rules": rules, "scorer": scorer}},
    }


def write_results(path: str | Path, forms: Iterable[dict[str, Any]]) -> Path:
    """Merge several ``results_form`` documents (one per task) into one results file at ``path``."""
    merged: dict[str, Any] = {}
    for form in forms:
        for k, v in form.items():
            if isinstance(v, dict) and k != "config":
                merged.setdefault(k, {}).update(v)
            else:
                merged[k] = v
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(dumps_json(merged, indent=2) + "\n", encoding="utf-8")
    return p


def load_json_or_jsonl(path: str | Path) -> tuple[list[tuple[str, dict]], list[str]]:
    """Records of a JSON array file or a JSONL file: ``(where, record)`` and unreadable entries."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"cannot read {p}: {e}") from e
    if text.lstrip().startswith("["):
        try:
            arr = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise RecordError(f"{p}: not a JSON array ({json_error_text(e)})") from e
        good = [(f"{p}[{i}]", r) for i, r in enumerate(arr) if isinstance(r, dict)]
        bad = [f"{p}[{i}]: expected an object" for i, r in enumerate(arr) if not isinstance(r, dict)]
        return good, bad
    return read_jsonl_lenient(p)
