"""The agent's points and the 3D target in a recording, as a viewer draws them: the points as image
annotations over the colour image, the target as a marker in the 3D scene.

- ``/pointlab/points/annotations`` (``foxglove_msgs/msg/ImageAnnotations``, Foxglove's schema for
  2D annotations, which its Image panel draws over the selected image; Lichtblick reads it too):
  one message per answer of the trial's agent, written at the answer's log time, with a circle
  per valid point. The first point (the one acted on, PointArena sec. 3.4) is a magenta disc of
  18 px with a white outline, the others cyan discs of 8 px with a black outline: the colours of
  the clip (``clip.draw_points``). A model whose first point was invalid gets no large disc, as in
  the clip. rosbags does not ship ``foxglove_msgs``; its definitions (the ROS 2 ``foxglove_msgs``
  3.x package of github.com/foxglove/foxglove-sdk, ``ros/.../ros2/*.msg``) are registered in the
  type store from the text below, so the MCAP carries them as any rosbag2 recording does.
  Coordinates: Foxglove's origin is the top-left corner of the top-left pixel, ours (librealsense's)
  the centre of that pixel, so a point ``(u, v)`` is drawn at ``(u + 0.5, v + 0.5)``. The points are
  pixels of the camera frame the agent saw (``PointAnswer.points_px``: original-image pixels), i.e.
  of the recorded colour image; ``points_annotations_cdr(scale=...)`` serves an image of another size.
  ``act --foxglove`` draws every answer live (``bridge.ros.foxglove_live``).
- ``/pointlab/markers`` (``visualization_msgs/msg/MarkerArray``, as RViz and Foxglove's 3D panel
  draw it): for every ``/pointlab/target`` (``PointStamped`` in the base frame), a green sphere of
  2 cm at the target, in the target's own frame and stamp (namespace ``pointlab_target``, id 0,
  so a later target replaces it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "POINTS_TOPIC",
    "MARKERS_TOPIC",
    "IMAGE_ANNOTATIONS",
    "MARKER_ARRAY",
    "FOXGLOVE_MSGS",
    "TARGET_DIAMETER_M",
    "points_annotations_cdr",
    "target_markers_cdr",
    "first_point_is_target",
    "answer_annotations_cdr",
]

POINTS_TOPIC = "/pointlab/points/annotations"
MARKERS_TOPIC = "/pointlab/markers"
IMAGE_ANNOTATIONS = "foxglove_msgs/msg/ImageAnnotations"
MARKER_ARRAY = "visualization_msgs/msg/MarkerArray"
TARGET_DIAMETER_M = 0.02

#: foxglove_msgs 3.x (ROS 2) definitions used here, by type name (comments dropped).
FOXGLOVE_MSGS = {
    "foxglove_msgs/msg/Point2": "float64 x\nfloat64 y\n",
    "foxglove_msgs/msg/Color": "float64 r\nfloat64 g\nfloat64 b\nfloat64 a\n",
    "foxglove_msgs/msg/CircleAnnotation": (
        "builtin_interfaces/Time timestamp\nfoxglove_msgs/Point2 position\nfloat64 diameter\n"
        "float64 thickness\nfoxglove_msgs/Color fill_color\nfoxglove_msgs/Color outline_color\n"
    ),
    "foxglove_msgs/msg/PointsAnnotation": (
        "builtin_interfaces/Time timestamp\nuint8 UNKNOWN=0\nuint8 POINTS=1\nuint8 LINE_LOOP=2\n"
        "uint8 LINE_STRIP=3\nuint8 LINE_LIST=4\nuint8 type\nfoxglove_msgs/Point2[] points\n"
        "foxglove_msgs/Color outline_color\nfoxglove_msgs/Color[] outline_colors\n"
        "foxglove_msgs/Color fill_color\nfloat64 thickness\n"
    ),
    "foxglove_msgs/msg/TextAnnotation": (
        "builtin_interfaces/Time timestamp\nfoxglove_msgs/Point2 position\nstring text\nfloat64 font_size\n"
        "foxglove_msgs/Color text_color\nfoxglove_msgs/Color background_color\n"
    ),
    IMAGE_ANNOTATIONS: (
        "foxglove_msgs/CircleAnnotation[] circles\nfoxglove_msgs/PointsAnnotation[] points\n"
        "foxglove_msgs/TextAnnotation[] texts\n"
    ),
}

_MAGENTA, _CYAN = (1.0, 0.0, 1.0, 1.0), (0.0, 1.0, 1.0, 1.0)
_WHITE, _BLACK, _GREEN = (1.0, 1.0, 1.0, 1.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.9, 0.2, 0.9)


def points_annotations_cdr(
    points_px: Sequence[Sequence[float]], stamp_ns: int, *, first_is_target: bool = True, scale: float = 1.0
) -> bytes:
    """``/pointlab/points/annotations`` for one answer, CDR bytes.

    Args:
        points_px: ``[(u, v), ...]`` valid points in pixels of the frame the agent saw (centres at
            integers); points that are not finite are left out.
        stamp_ns: the stamp of that frame (each circle's timestamp), ns since the epoch.
        first_is_target: draw ``points_px[0]`` as the point acted on (``False``: the model's first
            point was invalid, so none is drawn large).
        scale: the recorded image's width over the agent's frame's width.
    """
    from pointlab.bridge.recording.trial_bag import typestore

    store = typestore()
    T = store.types
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)

    def color(c):
        return T["foxglove_msgs/msg/Color"](r=c[0], g=c[1], b=c[2], a=c[3])

    circles = []
    for i, p in enumerate(points_px):
        u, v = float(p[0]), float(p[1])
        if not (math.isfinite(u) and math.isfinite(v)):
            continue
        first = i == 0 and first_is_target
        circles.append(
            T["foxglove_msgs/msg/CircleAnnotation"](
                timestamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec),
                position=T["foxglove_msgs/msg/Point2"](x=(u + 0.5) * scale, y=(v + 0.5) * scale),
                diameter=18.0 if first else 8.0,
                thickness=2.0,
                fill_color=color(_MAGENTA if first else _CYAN),
                outline_color=color(_WHITE if first else _BLACK),
            )
        )
    circles.reverse()  # drawn in order: the first point last, on top of any other
    msg = T[IMAGE_ANNOTATIONS](circles=circles, points=[], texts=[])
    return bytes(store.serialize_cdr(msg, IMAGE_ANNOTATIONS))


def first_point_is_target(answer) -> bool:
    """Whether the first of a ``PointAnswer``'s valid points (``points_px[0]``) is the point acted on:
    the model's first point was valid (PointArena sec. 3.4: the first point is the one used)."""
    return bool(answer.points[0].usable) if answer.points else bool(answer.points_px)


def answer_annotations_cdr(answer, fallback_stamp_ns: int) -> bytes:
    """``/pointlab/points/annotations`` for a ``PointAnswer`` (stamped with the frame the agent saw,
    else ``fallback_stamp_ns``), CDR bytes."""
    return points_annotations_cdr(
        [tuple(p) for p in answer.points_px],
        answer.stamp_ns or fallback_stamp_ns,
        first_is_target=first_point_is_target(answer),
    )


def target_markers_cdr(target) -> bytes | None:
    """``/pointlab/markers`` for a decoded ``geometry_msgs/PointStamped`` target (rosbags' or
    rclpy's), CDR bytes; ``None`` when a coordinate is not finite."""
    from pointlab.bridge.recording.trial_bag import typestore

    p = target.point
    if not all(math.isfinite(c) for c in (p.x, p.y, p.z)):
        return None
    store = typestore()
    T = store.types
    M = T["visualization_msgs/msg/Marker"]
    header = T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](
            sec=int(target.header.stamp.sec), nanosec=int(target.header.stamp.nanosec)
        ),
        frame_id=str(target.header.frame_id),
    )
    d = TARGET_DIAMETER_M
    marker = M(
        header=header,
        ns="pointlab_target",
        id=0,
        type=M.SPHERE,
        action=M.ADD,
        pose=T["geometry_msgs/msg/Pose"](
            position=T["geometry_msgs/msg/Point"](x=float(p.x), y=float(p.y), z=float(p.z)),
            orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0),
        ),
        scale=T["geometry_msgs/msg/Vector3"](x=d, y=d, z=d),
        color=T["std_msgs/msg/ColorRGBA"](r=_GREEN[0], g=_GREEN[1], b=_GREEN[2], a=_GREEN[3]),
        lifetime=T["builtin_interfaces/msg/Duration"](sec=0, nanosec=0),
        frame_locked=False,
        points=[],
        colors=[],
        texture_resource="",
        texture=T["sensor_msgs/msg/CompressedImage"](
            header=T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=0, nanosec=0), frame_id=""),
            format="",
            data=_empty_bytes(),
        ),
        uv_coordinates=[],
        text="",
        mesh_resource="",
        mesh_file=T["visualization_msgs/msg/MeshFile"](filename="", data=_empty_bytes()),
        mesh_use_embedded_materials=False,
    )
    return bytes(store.serialize_cdr(T[MARKER_ARRAY](markers=[marker]), MARKER_ARRAY))


def _empty_bytes():
    import numpy as np

    return np.zeros(0, np.uint8)
