"""The arm in a recording: ``/robot_description`` and ``/tf`` from ``/joint_states``, as a ROS graph
with robot_state_publisher would have recorded them.

The rclpy wheels lack ``tf2_msgs`` and no robot_state_publisher runs here, so the recorder writes
both itself (rosbags' message definitions, like ``/tf_static``): ``/robot_description``
(``std_msgs/String``, the Lite 6 URDF of ``robot.lite6_model.robot_description``) once when a recording
begins, offered transient local (latched) as robot_state_publisher offers it; and, for every
``/joint_states`` message of the Lite 6's six joints, one ``/tf`` message (``tf2_msgs/TFMessage``)
with the six joint transforms (``robot.lite6_model.link_transforms``) stamped with the joint state's
own header stamp and written at its log time. With ``/tf_static`` (camera in ``link_base``), a 3D
panel then shows the arm moving and the camera's picture and depth where the camera is.
"""

from __future__ import annotations

import logging

from pointlab.robot.lite6_model import LITE6_JOINTS, link_transforms, robot_description

from pointlab.bridge.recording.static_tf import StaticTransform, tf_message_cdr

__all__ = ["TF", "ROBOT_DESCRIPTION", "STRING", "robot_description_cdr", "tf_of_joint_state"]

log = logging.getLogger(__name__)

TF = "/tf"
ROBOT_DESCRIPTION = "/robot_description"
STRING = "std_msgs/msg/String"
_NAMES = [j.name for j in LITE6_JOINTS]


def robot_description_cdr(tool: str | None = "lite_gripper") -> bytes:
    """``/robot_description`` as CDR bytes (``std_msgs/String`` of the Lite 6 URDF)."""
    from pointlab.bridge.recording.trial_bag import typestore

    store = typestore()
    return bytes(store.serialize_cdr(store.types[STRING](data=robot_description(tool)), STRING))


def tf_of_joint_state(msg) -> bytes | None:
    """One ``/tf`` message (CDR) for a decoded ``sensor_msgs/JointState`` of the Lite 6, or ``None``
    when it does not hold the six joints (another robot's, a gripper's) or a value is not finite."""
    from pointlab.perception.image_msgs import stamp_to_ns

    by_name = dict(zip(msg.name, msg.position))
    if not all(n in by_name for n in _NAMES):
        return None
    try:
        links = link_transforms([by_name[n] for n in _NAMES])
    except ValueError:
        return None
    return tf_message_cdr([StaticTransform(p, c, T) for p, c, T in links], stamp_to_ns(msg.header.stamp))
