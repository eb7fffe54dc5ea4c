"""ROS 2 nodes that glue camera, agent, targeting and arm; the trial runner, store and the CLI."""
