"""``ast.parse`` with the garbage collector off while it runs.

The CPython 3.11 this project runs on (3.11.7) can raise ``SystemError: AST constructor recursion depth
mismatch`` when Python code runs in the middle of building an AST and another thread builds one too:
the depth counter is shared (https://github.com/python/cpython/issues/106905, fixed by
python/cpython#106906). Seen once in CI: a collection ran a destroyed asyncio task's finalizer inside
``ast.parse`` while other threads of earlier tests were alive. With the collector off, building the
AST runs no Python code, so no other thread runs in between.
"""

from __future__ import annotations

import ast
import gc

__all__ = ["parse_source"]


def parse_source(text: str) -> ast.Module:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(text)
    finally:
        if enabled:
            gc.enable()
