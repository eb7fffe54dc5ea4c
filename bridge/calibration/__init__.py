"""Where the camera is in the robot's base frame: hand-eye calibration with the arm and a ChArUco
board (``procedure``; the math is ``perception.handeye``) and the stand-in fitted to a recorded
table (``table``). docs/calibration.md."""
