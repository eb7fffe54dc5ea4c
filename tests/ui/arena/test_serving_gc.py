"""A serving arena process tunes CPython's collector (``tune_gc_for_serving``, docs/arena.md
"Performance"): the start-up heap frozen, young objects collected every 20,000 allocations. Run in a
child process: the thresholds are process-wide and must not leak into the test run."""

from __future__ import annotations

import json
import subprocess
import sys


def test_a_serving_process_freezes_its_start_up_heap_and_collects_less_often():
    code = (
        "import gc, json\n"
        "before = (gc.get_threshold(), gc.get_freeze_count())\n"
        "from pointlab.ui.arena.launch import tune_gc_for_serving\n"
        "tune_gc_for_serving()\n"
        "print(json.dumps([before, [gc.get_threshold(), gc.get_freeze_count()]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    (thr0, frozen0), (thr1, frozen1) = json.loads(out.stdout)
    assert thr0 != [20000, 50, 50] and frozen0 == 0  # CPython's defaults before ((700, 10, 10) in 3.11)
    assert thr1 == [20000, 50, 50]
    assert frozen1 > 10_000  # the imported modules' objects at least
