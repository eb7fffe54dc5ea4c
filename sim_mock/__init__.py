"""Test doubles for what cannot run here: the simulated Lite 6 and tabletop, the sim camera, the
local OpenAI-compatible model server and the xArm controller emulator. Product code reaches these
only through the camera and arm registries and the agents config."""

from pointlab.perception.camera import register_camera_source as _register_camera_source

# The calibration camera (the sim tabletop with a ChArUco board in view): built lazily by name.
_register_camera_source("sim-board", "pointlab.sim_mock.board_camera:BoardCamera.from_spec")
