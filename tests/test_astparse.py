"""The suite's serialised ``ast.parse`` (tests/astparse.py)."""

from __future__ import annotations

import ast
import threading

from tests import astparse


def test_the_suite_runs_with_ast_parse_serialised_and_it_still_parses():
    astparse.serialize_ast_parse()  # idempotent: conftest already did
    assert getattr(ast.parse, "_pointlab_serialized", False)
    tree = ast.parse("a = b(c)")
    assert isinstance(tree.body[0], ast.Assign) and tree.body[0].targets[0].id == "a"


def test_a_parse_waits_while_another_thread_holds_the_parse_lock():
    astparse.serialize_ast_parse()
    done = threading.Event()

    def parser():
        ast.parse("x = 1")
        done.set()

    with astparse._LOCK:
        t = threading.Thread(target=parser)
        t.start()
        # Held here: the other thread cannot be building its AST. (Only the not-yet-done direction is
        # timed; when the lock works, it holds for any wait.)
        assert not done.wait(0.2)
    assert done.wait(30)
    t.join(30)
