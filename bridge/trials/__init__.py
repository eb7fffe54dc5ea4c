"""The trial: every rule of one Point-Act trial, with no rclpy, FastAPI or SQL import.

What a trial is (its record and vocabulary: ``record``, ``outcomes``), how a point becomes a
base-frame target (``targeting``), how it is judged automatically and where a failure is charged
(``autocheck``, ``placement``: in, on or next to, ``attribution``), what the arm holds
(``belief``), when an answer may take effect (``timing``), and the trial machine itself with the
ports it talks to the world through (``machine``, ``ports``, ``driver``). The browser session, ``pointlab act trials`` and bag replay all drive the
same machine; the ROS nodes (``bridge.ros``) and the web app (``ui``) are adapters (docs/trials.md).
"""
