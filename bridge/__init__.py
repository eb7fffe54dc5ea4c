"""Point-Act: the trial's path from a participant's instruction to a judged, stored trial.

Sub-packages, in the order a trial passes through them (docs/architecture.md):

- ``trials``: the trial machine and every trial rule (no ROS, web or SQL import);
- ``ros``: the ROS 2 node set (camera, pointing, targeting, arm) and the adapters that give the
  trial machine its ports over those topics;
- ``recording``: what a trial leaves on disk (MCAP, clip);
- ``study``: the study design, the store and the results;
- ``calibration``: the camera's pose in the robot's base frame;
- ``commands``: the bridge's CLI commands.

At the top: ``session`` (everything started in one process), ``worlds`` (the simulator registry),
``perf_loop`` and ``cli`` (the ``pointlab`` entry point).
"""
