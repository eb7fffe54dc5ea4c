"""Trial recordings (docs/recording.md): where a trial's files go (``layout``), the recording engine
(``recorder``: queue, thread, thinning), one rosbag2/MCAP folder per trial (``trial_bag``) and the
short H.264 clip with the agent's points drawn (``clip``). The ROS subscriptions that feed it are
``bridge.ros.recorder``."""
