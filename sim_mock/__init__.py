"""Test doubles for what cannot run here: the simulated Lite 6 and tabletop, the sim camera, the
local OpenAI-compatible model server and the xArm controller emulator. Product code reaches these
only through registries (the entry points in pyproject.toml, listed in ``sim_mock.plugins``): it
never imports this package."""

from .mjrender import ensure_gl_backend as _ensure_gl_backend

# MuJoCo picks its OpenGL backend when it is first imported: headless EGL unless the user chose one.
_ensure_gl_backend()
