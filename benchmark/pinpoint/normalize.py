"""Label and relation normalization of the SSP scorer (PinpointQA App. B.2), with the authors' maps.

The synonym and relation maps are those of the released evaluator (rainchowz/PinpointQA,
``eval_utils/constants.py`` and ``normalize.py`` at 8ae288a): one map for object labels, one for
supporting-surface labels, one relation alias map. Labels: ``str()``, lower case, stripped;
underscores and hyphens to spaces; quotation marks and parenthetical text removed; repeated spaces
collapsed; then the synonym map, a singular, and the synonym map again. Relations: lower case,
spaces and hyphens to underscores, then the alias map (``by`` -> ``near``, ``beside`` -> ``next_to``).

The singular is the one rule the two rule sets read differently (docs/scoring.md,
``pinpoint.singular``): the released code strips ``es`` from any label longer than 4 characters
(``shoes`` -> ``sho``, ``tables`` -> ``tabl``) and ``s`` from any longer than 3; pointlab applies a
conservative English singular to the last word (App. B.2: "a conservative singularization rule").
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "RELATIONS",
    "OBJECT_SYNONYMS",
    "SURFACE_SYNONYMS",
    "RELATION_ALIASES",
    "normalize_label",
    "normalize_surface",
    "normalize_relation",
    "singularize",
    "reference_singularize",
    "basic_label",
]

#: the nine relation tokens (sec. 3.2).
RELATIONS = ("on", "under", "above", "below", "side_above", "side_below", "next_to", "near", "attached_to")

#: the released evaluator's DEFAULT_OBJECT_SYNONYMS (whole normalized labels).
OBJECT_SYNONYMS: dict[str, str] = {
    "couch": "sofa",
    "night stand": "nightstand",
    "night-stand": "nightstand",
    "trash can": "trashcan",
    "trash bin": "trashcan",
    "garbage bin": "trashcan",
    "garbage can": "trashcan",
    "rubbish bin": "trashcan",
    "cell phone": "phone",
    "cellphone": "phone",
    "mobile phone": "phone",
    "mobile": "phone",
    "smartphone": "phone",
    "drawer unit": "drawer",
    "book shelf": "bookshelf",
    "cupboard": "cabinet",
    "display": "monitor",
}
#: the released evaluator's DEFAULT_SURFACE_SYNONYMS (supporting surfaces).
SURFACE_SYNONYMS: dict[str, str] = {
    "night stand": "nightstand",
    "night-stand": "nightstand",
    "bed side table": "nightstand",
    "bedside table": "nightstand",
    "counter top": "countertop",
    "counter-top": "countertop",
    "table top": "table",
    "table-top": "table",
    "sofa seat": "sofa",
}
#: the released evaluator's relation aliases (after lower-casing and space/hyphen -> underscore).
RELATION_ALIASES: dict[str, str] = {
    "nextto": "next_to",
    "sideabove": "side_above",
    "sidebelow": "side_below",
    "attached": "attached_to",
    "close_to": "near",
    "closeby": "near",
    "nearby": "near",
    "near_by": "near",
    "by": "near",
    "beside": "next_to",
    "adjacent": "next_to",
    "adjacent_to": "next_to",
    "alongside": "next_to",
    "on_top_of": "on",
    "ontopof": "on",
    "underneath": "under",
}

_QUOTES = re.compile(r"[\"'`]")
_PAREN = re.compile(r"\([^)]*\)")
_ES_PLURAL = ("ches", "shes", "sses", "xes", "zzes")


def singularize(word: str) -> str:
    """pointlab's conservative singular of one word: ``batteries`` -> ``battery``, ``boxes`` -> ``box``,
    ``glasses`` -> ``glass``, ``shoes`` -> ``shoe``, ``cups`` -> ``cup``; words ending in ``ss``/``us``/``is``
    and words of three letters or fewer are left alone (``glass``, ``bus``, ``tennis``, ``gas``)."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(_ES_PLURAL):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def reference_singularize(label: str) -> str:
    """The released evaluator's ``_light_singularize`` of a whole label."""
    if label.endswith("es") and len(label) > 4:
        return label[:-2]
    if label.endswith("s") and len(label) > 3:
        return label[:-1]
    return label


def basic_label(label: Any) -> str:
    """The shared clean-up: ``str()`` (``None`` -> ``""``), lower case, ``_``/``-`` to spaces, quotes and
    parenthetical text removed, spaces collapsed."""
    s = "" if label is None else str(label).strip().lower()
    s = s.replace("_", " ").replace("-", " ")
    s = _QUOTES.sub("", s)
    s = _PAREN.sub("", s)
    return " ".join(s.split())


def _normalize(label: Any, synonyms: dict[str, str], rules: str) -> str:
    s = basic_label(label)
    s = synonyms.get(s, s)
    if rules == "reference":
        one = reference_singularize(s)
    else:
        words = s.split(" ")
        words[-1] = singularize(words[-1])
        one = " ".join(words)
    return synonyms.get(one, one)


def normalize_label(label: Any, rules: str = "pointlab") -> str:
    """Normalized object label (App. B.2) under ``rules``; ``None`` gives ``""``."""
    return _normalize(label, OBJECT_SYNONYMS, rules)


def normalize_surface(label: Any, rules: str = "pointlab") -> str:
    """Normalized supporting-surface label (App. B.2, the surface map) under ``rules``."""
    return _normalize(label, SURFACE_SYNONYMS, rules)


def normalize_relation(relation: Any) -> str:
    """Normalized relation token (App. B.2, the released alias map); ``None`` gives ``""``."""
    s = ("" if relation is None else str(relation).strip().lower()).replace(" ", "_").replace("-", "_")
    return RELATION_ALIASES.get(s, s)
