"""Label and relation normalization of the SSP scorer (PinpointQA App. B.2).

Labels: lower case; underscores and hyphens to spaces; quotation marks and parenthetical text
removed; repeated spaces collapsed; then the fixed synonym map, a conservative singular of the
last word, and the synonym map again (so ``"Mobile-Phones"`` -> ``"mobile phone"`` -> ``"phone"``).
Relations: lower case, spaces and hyphens to underscores, then a fixed alias map onto the nine
relation tokens (``beside`` / ``adjacent to`` -> ``next_to``, ``close to`` / ``nearby`` -> ``near``).
Anything else is kept as written and simply fails to match: no open-ended semantic matching.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["RELATIONS", "LABEL_SYNONYMS", "RELATION_ALIASES", "normalize_label", "normalize_relation",
           "singularize"]

#: the nine relation tokens (sec. 3.2).
RELATIONS = ("on", "under", "above", "below", "side_above", "side_below", "next_to", "near", "attached_to")

#: the fixed synonym map, applied to whole normalized labels (App. B.2 names the phone group,
#: night stand -> nightstand and table top -> table; the rest are the vocabulary groupings of
#: App. A.1 and a few equally unambiguous spellings).
LABEL_SYNONYMS: dict[str, str] = {
    "mobile phone": "phone", "smartphone": "phone", "smart phone": "phone", "cell phone": "phone",
    "cellphone": "phone", "mobile": "phone",
    "night stand": "nightstand", "bedside table": "nightstand", "bed side table": "nightstand",
    "table top": "table", "tabletop": "table",
    "counter top": "countertop",
    "remote": "remote control", "tv remote": "remote control", "remote controller": "remote control",
    "tv controller": "remote control",
    "mouse pad": "mousepad",
    "computer mouse": "mouse",
    "couch": "sofa",
    "trash bin": "trash can", "trashcan": "trash can", "garbage bin": "trash can", "garbage can": "trash can",
    "rubbish bin": "trash can", "waste bin": "trash can", "wastebasket": "trash can",
    "book shelf": "bookshelf",
    "cupboard": "cabinet",
}

#: relation spellings -> the nine tokens (after lower-casing and space/hyphen -> underscore).
RELATION_ALIASES: dict[str, str] = {
    "beside": "next_to", "adjacent": "next_to", "adjacent_to": "next_to", "nextto": "next_to",
    "alongside": "next_to", "by_the_side_of": "next_to",
    "close_to": "near", "close": "near", "nearby": "near", "near_by": "near", "near_to": "near",
    "closeby": "near", "close_by": "near",
    "on_top_of": "on", "ontop": "on", "on_top": "on", "atop": "on", "upon": "on",
    "underneath": "under", "beneath": "under",
    "attached": "attached_to", "attachedto": "attached_to", "attached_on": "attached_to",
    "sideabove": "side_above", "to_the_side_of_and_above": "side_above", "side_and_above": "side_above",
    "sidebelow": "side_below", "to_the_side_of_and_below": "side_below", "side_and_below": "side_below",
}

_QUOTES = re.compile(r"[\"'`\u2018\u2019\u201c\u201d]")
_PAREN = re.compile(r"\([^)]*\)")
_ES_PLURAL = ("ches", "shes", "sses", "xes", "zzes")


def singularize(word: str) -> str:
    """Conservative singular of one word: ``batteries`` -> ``battery``, ``boxes`` -> ``box``,
    ``glasses`` -> ``glass``, ``cups`` -> ``cup``; words ending in ``ss``/``us``/``is`` and words of
    three letters or fewer are left alone (``glass``, ``bus``, ``tennis``, ``gas``)."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(_ES_PLURAL):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _basic(label: str) -> str:
    s = label.lower().replace("_", " ").replace("-", " ")
    s = _QUOTES.sub("", s)
    s = _PAREN.sub(" ", s)
    return " ".join(s.split())


def normalize_label(label: Any) -> str:
    """Normalized object / surface label (App. B.2); ``None`` or a non-string gives ``""``."""
    if not isinstance(label, str):
        return ""
    s = _basic(label)
    if not s:
        return ""
    s = LABEL_SYNONYMS.get(s, s)
    words = s.split(" ")
    words[-1] = singularize(words[-1])
    s = " ".join(words)
    return LABEL_SYNONYMS.get(s, s)


def normalize_relation(relation: Any) -> str:
    """Normalized relation token (App. B.2); ``None`` or a non-string gives ``""``."""
    if not isinstance(relation, str):
        return ""
    s = relation.strip().lower()
    s = _QUOTES.sub("", s)
    s = re.sub(r"[\s\-]+", "_", s).strip("_")
    return RELATION_ALIASES.get(s, s)
