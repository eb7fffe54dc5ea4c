"""Serialise ``ast.parse`` in the test process, with the garbage collector off while it runs.

The CPython 3.11 this project is tested on (3.11.7) raises ``SystemError: AST constructor recursion
depth mismatch`` when two threads build an AST at once: the depth counter is shared per interpreter
(https://github.com/python/cpython/issues/106905, fixed by python/cpython#106906), and a collection
inside ``ast.parse`` can run a finalizer, whose bytecode lets the other thread in. Two places build
ASTs from threads the suite does not control: 3.11's ``traceback`` parses each source line to draw
its ``^^^`` carets (a server thread logging an exception), and pytest's assertion rewriter parses
every module of a pytest-plugin distribution when it is first imported (starlette's lazy
``anyio.open_file`` inside a uvicorn thread: seen in CI as a browser test whose page never loaded).
``serialize_ast_parse`` wraps ``ast.parse`` (looked up as an attribute by both callers) with one
re-entrant lock and the collector off, so no two ASTs are built at once. Reproduction: two threads, one parsing a large module in a loop, the other parsing a line while dropping cycles
that have ``__del__``; without the wrapper it fails within seconds on 3.11.7.
"""

from __future__ import annotations

import ast
import functools
import gc
import threading

__all__ = ["serialize_ast_parse"]

_LOCK = threading.RLock()


def serialize_ast_parse() -> None:
    """Replace ``ast.parse`` by a serialised copy (idempotent)."""
    if getattr(ast.parse, "_pointlab_serialized", False):
        return
    original = ast.parse

    @functools.wraps(original)
    def parse(*args, **kwargs):
        with _LOCK:
            enabled = gc.isenabled()
            gc.disable()
            try:
                return original(*args, **kwargs)
            finally:
                if enabled:
                    gc.enable()

    parse._pointlab_serialized = True  # type: ignore[attr-defined]
    ast.parse = parse
