"""A sim model that answers video and QA questions from their answer key (a test double: what lets
``pointlab bench run vsibench --model sim-oracle`` run with no model and no key).

The question is found by its text: the key record whose ``question`` the request's text contains (the
longest such question wins). ``sim-oracle`` answers the record's ``ground_truth`` (VSI-Bench / ReVSI) or
``answer`` as text; ``sim-noisy`` answers a wrong option letter for a third of the multiple-choice
questions and scales numbers by 0.7-1.3, seeded by the question id, so its scores are below 1 and the
same on every run. A question the key does not hold gets "I don't know.".
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["QAOracleModel", "qa_sim_models"]

UNKNOWN = "I don't know."


class QAOracleModel:
    """``answer(request)`` from the answer key ``records`` (module docstring)."""

    def __init__(self, records: Sequence[Mapping[str, Any]], *, noisy: bool = False) -> None:
        self.records = [r for r in records if str(r.get("question", "")).strip()]
        self.noisy = noisy

    def _record(self, text: str) -> Mapping[str, Any] | None:
        found = [r for r in self.records if str(r["question"]).strip() in text]
        return max(found, key=lambda r: len(str(r["question"]))) if found else None

    def answer(self, request: Any) -> str:
        rec = self._record(request.all_text)
        if rec is None:
            return UNKNOWN
        truth = rec.get("ground_truth", rec.get("answer"))
        if not self.noisy:
            return str(truth)
        rng = random.Random(hashlib.sha256(str(rec.get("id")).encode()).digest())
        if isinstance(truth, (int, float)) and not isinstance(truth, bool):
            return f"{float(truth) * rng.uniform(0.7, 1.3):.2f}"
        letters = string.ascii_uppercase[: len(rec.get("options") or []) or 4]
        if str(truth) in letters and rng.random() < 1 / 3:
            return rng.choice([c for c in letters if c != str(truth)] or [str(truth)])
        return str(truth)


def qa_sim_models(records: Sequence[Mapping[str, Any]]) -> dict[str, QAOracleModel]:
    """``sim-oracle`` and ``sim-noisy`` answering from ``records`` (the ids of the default agents file)."""
    return {"sim-oracle": QAOracleModel(records), "sim-noisy": QAOracleModel(records, noisy=True)}
