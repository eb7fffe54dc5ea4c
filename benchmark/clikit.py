"""What every package's CLI sub-app is made of: its command groups, and the two output functions.

Each package that has commands owns one ``SubApp`` (``benchmark/cli.py``, ``bridge/commands.py``,
``ui/cli.py``, ``sim_mock/cli.py``) and registers a zero-argument function returning it under the
``pointlab.cli`` entry-point group in ``pyproject.toml``. ``pointlab.bridge.cli`` finds them there and
merges them into the one ``pointlab`` command, group by group (``score`` takes commands from
benchmark and bridge), so no package imports another's commands and the assembler imports none.

Commands are thin (docs/architecture.md): parse arguments, call one library function, ``print_json``
its result, map the library's error to ``fail(message, code)``. Heavy imports (rclpy, pyrealsense2,
the sim) happen inside the command function, never at module import.

This module sits in ``benchmark`` because benchmark is the lowest package every package with
commands depends on (perception and robot, below it, have no commands of their own).
"""

from __future__ import annotations

import contextvars
import math
import sys
from typing import Any, NoReturn

import typer

from .records import dumps_json

__all__ = [
    "SubApp",
    "GROUPS",
    "SEED_MAX",
    "OUTPUT_OPTIONS",
    "print_json",
    "fail",
    "guard_options",
    "require_writable_file",
    "wait_until_stopped",
]

#: the largest ``--seed`` (numpy's generators take 0 .. 2**32 - 1 as a legacy seed; a negative one
#: raised ``ValueError`` deep inside a run)
SEED_MAX = 2**32 - 1

# The command groups of ``pointlab`` and their help lines; a sub-app may add commands to these only.
GROUPS: dict[str, str] = {
    "act": "Point-Act: the robot trial session, headless trials, single nodes, exports.",
    "score": "Score saved predictions (no model calls). Prints JSON {items, summary}.",
    "perf": "Performance measurements with percentiles against an in-run baseline.",
    "sim": "Simulated parts: model server, xArm controller emulator, sim snapshots.",
    "bench": "Run a model over a benchmark dataset; Point-Battle and its pages.",
    "video": "Video spatial tasks: frame budgets, generation.",
    "pinpoint": "PinpointQA: question generation from 3D scenes, the human localization study.",
}


class SubApp:
    """One package's commands: top-level ones on ``root``, the rest on ``group(name)``.

    Args:
        package: the owning package's short name (``benchmark``, ``bridge``, ...), for messages.
    """

    def __init__(self, package: str) -> None:
        self.package = package
        self.root = typer.Typer(add_completion=False)
        self.groups: dict[str, typer.Typer] = {}

    def group(self, name: str) -> typer.Typer:
        """The typer app of group ``name`` (one of ``GROUPS``) to decorate commands onto.

        Raises:
            ValueError: ``name`` is not a group of ``pointlab``.
        """
        if name not in GROUPS:
            raise ValueError(f"{self.package}: unknown command group {name!r}; groups: {', '.join(GROUPS)}")
        return self.groups.setdefault(name, typer.Typer(add_completion=False))


def print_json(obj: Any) -> None:
    """Write one JSON document to stdout (the machine-readable output of every command).

    Strict JSON: NaN and infinities are written as ``null`` (``records.dumps_json``)."""
    sys.stdout.write(dumps_json(obj, indent=2) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error to stderr and exit with ``code`` (2: bad input, 1: runtime failure).
    Inside a command the line names it (``pointlab act trials: error: ...``), as a usage error does."""
    where = _COMMAND.get()
    typer.echo(f"{where}: error: {message}" if where else f"error: {message}", err=True)
    raise typer.Exit(code)


#: the running command's path (``pointlab act trials``), set by ``guard_options``'s wrapper for ``fail``
_COMMAND: contextvars.ContextVar[str | None] = contextvars.ContextVar("pointlab_command", default=None)


#: options that name something a command writes (a file, a folder or a file stem)
OUTPUT_OPTIONS = ("out", "lmms_results")


def guard_options(app: typer.Typer, path: str = "pointlab") -> int:
    """Make every command of ``app`` (its groups' too) check, before it runs, what typer cannot:
    a float option must be finite (typer reads ``nan``, ``inf`` and ``-inf`` as floats, and a bound
    compares false with NaN: a NaN settle time once moved the arm before failing), and an output
    option (``OUTPUT_OPTIONS``: ``--out``, ``--lmms-results``) must lie under a writable folder
    (its nearest existing ancestor is a folder this process may write). Either failure is one line
    and exit code 2. Returns how many commands were guarded.

    The checks wrap each command's callback (``functools.wraps``: typer reads the same signature),
    so a command added later is covered too. Idempotent.
    """
    n = 0
    for cmd in app.registered_commands:
        if cmd.callback is not None and not getattr(cmd.callback, "_guarded", False):
            name = cmd.name or cmd.callback.__name__.replace("_", "-")  # typer's default name
            cmd.callback = _guarded_callback(cmd.callback, f"{path} {name}")
            n += 1
    if app.registered_callback is not None and app.registered_callback.callback is not None:
        cb = app.registered_callback.callback
        if not getattr(cb, "_guarded", False):
            app.registered_callback.callback = _guarded_callback(cb, path)
            n += 1
    for group in app.registered_groups:
        if group.typer_instance is not None:
            n += guard_options(group.typer_instance, f"{path} {group.name}" if group.name else path)
    return n


def _guarded_callback(callback, where: str):
    import functools
    import inspect

    flags = {}
    for name, p in inspect.signature(callback).parameters.items():
        decls = [d for d in getattr(p.default, "param_decls", None) or () if d.startswith("--")]
        flags[name] = decls[0].split("/")[0] if decls else name

    @functools.wraps(callback)
    def checked(*args, **kwargs):
        _COMMAND.set(where)
        for name, value in kwargs.items():
            values = value if isinstance(value, (list, tuple)) else (value,)
            bad = [v for v in values if isinstance(v, float) and not math.isfinite(v)]
            if bad:
                fail(f"{flags.get(name, name)}: {bad[0]} is not a finite number")
            if name in OUTPUT_OPTIONS and value is not None:
                problem = unwritable(value)
                if problem:
                    fail(f"{flags.get(name, name)} {value}: {problem}")
        return callback(*args, **kwargs)

    checked._guarded = True  # type: ignore[attr-defined]  # a mark on the function object, read by getattr
    return checked


def _can_create_in(folder) -> bool:
    """Whether a file can be created in ``folder``, tried for real: ``os.access`` says yes to root on a
    read-only or virtual file system (``/sys``). The probe is an unnamed temporary file (``O_TMPFILE``
    on Linux), so nothing appears in the folder."""
    import os
    import tempfile

    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def unwritable(path) -> str | None:
    """Why nothing can be written at ``path`` (or below it), or ``None``: its nearest existing
    ancestor must be a folder this process may write into."""
    import os
    from pathlib import Path

    p = Path(path).absolute()
    if p.exists():
        if p.is_dir() and not os.access(p, os.W_OK | os.X_OK):
            return "folder not writable"
        if p.is_file() and not os.access(p, os.W_OK):
            return "file not writable"
        return None
    anc = p.parent
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir():
        return f"{anc} is a file, not a folder"
    if not _can_create_in(anc):
        return f"folder {anc} is not writable"
    return None


def require_writable_file(path, option: str, *, sqlite: bool = False) -> None:
    """Exit 2 unless ``path`` can be a file this command writes: its folder exists and is writable,
    and ``path`` is not a folder; with ``sqlite``, an existing non-empty file must start with SQLite's
    header (a README given as ``--db`` is refused here, not after a session started). Checked before
    anything starts (a sim, a server, a motion)."""
    import os
    from pathlib import Path

    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        fail(f"{option} {p}: is a folder, not a file")
    if folder.exists() and not folder.is_dir():
        fail(f"{option} {p}: {folder} is a file, not a folder")
    if not folder.is_dir():
        fail(f"{option} {p}: folder {folder} does not exist")
    if not _can_create_in(folder) or (p.exists() and not os.access(p, os.W_OK)):
        fail(f"{option} {p}: not writable (folder {folder})")
    if sqlite and p.is_file() and p.stat().st_size > 0:
        with open(p, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                fail(f"{option} {p}: not an SQLite database (a pointlab store is created when the file is absent)")


def require_items(items, source) -> None:
    """Exit 2 when a ground truth holds no item: an empty file or folder is a mistake (a wrong path, an
    unfinished export), not a benchmark whose score is "n = 0"."""
    if not len(items):
        fail(f"{source}: no ground-truth items")


def wait_until_stopped(ready=None) -> None:
    """Block the main thread until SIGTERM or Ctrl-C (a long-running command whose work runs in
    other threads: ``act station``, ``sim fleet``); the caller's ``finally`` then closes its parts.
    ``ready``: called once both signals are handled (a supervisor may signal from then on)."""
    import signal
    import threading

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    # SIGINT too, explicitly: a process started in the background of a script, or by a test runner's
    # worker, inherits SIGINT ignored, and Python then leaves it ignored (Ctrl-C or kill -INT would
    # do nothing; seen in CI: a station that never stopped)
    signal.signal(signal.SIGINT, lambda *_: done.set())
    if ready is not None:
        ready()
    while not done.wait(0.5):  # a timed wait: the handlers run on the main thread between waits
        pass
