"""docs/scoring.md carries one table of every rule with both values (issue 12): it equals ``scorers.RULES``,
every differing rule cites its paper, and every named test exists."""

from __future__ import annotations

import re
from pathlib import Path

from pointlab.benchmark.scorers import RULES, rules_table_markdown, scorer_names

REPO = Path(__file__).resolve().parents[2]


def test_docs_table_is_the_rules_registry():
    doc = (REPO / "docs" / "scoring.md").read_text(encoding="utf-8")
    assert rules_table_markdown() in doc, "regenerate the table: scorers.rules_table_markdown()"


def test_every_difference_cites_the_paper_and_has_a_test():
    for r in RULES:
        if r.differs:
            assert r.paper, r.key
        path, name = r.test.split("::")
        text = (REPO / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {re.escape(name)}\(", text, re.M), r.test


def test_every_scorer_is_registered():
    assert scorer_names() == ["egopoint", "localization", "pinpoint", "pointing", "vsi"]
