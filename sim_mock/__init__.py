"""Test doubles for what cannot run here: the simulated Lite 6 and tabletop, the sim camera, the
local OpenAI-compatible model server and the xArm controller emulator. Product code reaches these
only through the camera and arm registries and the agents config."""
