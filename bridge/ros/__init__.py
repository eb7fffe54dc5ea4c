"""The ROS 2 side of Point-Act, in one place: the node set (camera, pointing, targeting, arm), the
topic table and message conversions, the rclpy host, the one-session-per-domain guard and the trial
runner that drives the nodes. Nothing outside this package imports rclpy."""
