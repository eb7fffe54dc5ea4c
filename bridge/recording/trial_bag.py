"""One trial's rosbag2 folder with MCAP storage, written with ``rosbags`` (no ROS install needed).

The folder is what ``ros2 bag record -s mcap`` makes (``metadata.yaml`` + ``<name>.mcap``), so
``ros2 bag play <folder>`` works on every ROS 2 distribution that has the MCAP storage plugin, the
``.mcap`` alone opens in Foxglove and with the ``mcap`` reader library (profile ``ros2``, schemas
``ros2msg``, messages ``cdr``), and ``rosbags`` reads either. Messages are written as serialized CDR
bytes (those that arrived on an rclpy raw subscription, or the recorder's compressed images), with
the publisher's header stamps; the MCAP log time (and publish time, rosbags writes one value) is the time of
reception. Message definitions come from rosbags' Kilted type store (the ROS 2 wheels here are
Kilted; the image, camera-info, joint-state, pose and string types are the same in every
distribution since Humble).
"""

from __future__ import annotations

import functools
import logging
import shutil
from pathlib import Path

from pointlab.bridge.errors import BridgeError

__all__ = ["TrialBag", "typestore", "BagError"]

log = logging.getLogger(__name__)


class BagError(BridgeError, RuntimeError):
    """The bag could not be created or written (folder exists or not writable, disk full)."""


@functools.lru_cache(maxsize=1)
@functools.cache
def typestore():
    """rosbags' ROS 2 Kilted type store, plus the ``foxglove_msgs`` types of the image annotations
    (``annotations.FOXGLOVE_MSGS``); built once (about 0.15 s) and shared: it is only read after."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    from pointlab.bridge.recording.annotations import FOXGLOVE_MSGS

    store = get_typestore(Stores.ROS2_KILTED)
    for name, text in FOXGLOVE_MSGS.items():
        store.register(get_types_from_msg(text, name))
    return store


def _latched_qos():
    """What tf2_ros's static broadcaster offers (depth 1, reliable, transient local; deadline and
    lifespan infinite as rosbag2 writes them): ``ros2 bag play`` republishes a topic with the QoS its
    bag says was offered, so a ``/tf_static`` stored so reaches late subscribers, as tf2 expects."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    infinite = QosTime(9223372036, 854775807)
    return Qos(
        QosHistory.KEEP_LAST,
        1,
        QosReliability.RELIABLE,
        QosDurability.TRANSIENT_LOCAL,
        infinite,
        infinite,
        QosLiveliness.AUTOMATIC,
        infinite,
        False,
    )


LATCHED_QOS = _latched_qos()


class TrialBag:
    """Creates the rosbag2 folder ``folder`` (it must not exist) with one connection per topic.

    Args:
        folder: the bag folder; its MCAP is ``folder / (folder.name + ".mcap")``.
        topics: ``{topic name: ROS type}`` (e.g. ``"sensor_msgs/msg/Image"``), registered up front
            so the metadata lists every recorded topic, with 0 for those that stayed silent.
        compress: zstd-compress each chunk (MCAP chunk compression; rosbag2's ``storage`` mode).
        latched: topics whose connection says it was offered transient local (``/tf_static``).

    Raises:
        BagError: the folder exists, cannot be made, or a type is unknown.
    """

    def __init__(
        self, folder: str | Path, topics: dict[str, str], *, compress: bool = True, latched: tuple[str, ...] = ()
    ) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer, WriterError
        from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

        self.folder = Path(folder)
        self.mcap_path = self.folder / f"{self.folder.name}.mcap"
        self.counts: dict[str, int] = {t: 0 for t in topics}
        self._writer = Writer(self.folder, version=9, storage_plugin=StoragePlugin.MCAP)
        if compress:
            self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        try:
            self._writer.open()
            store = typestore()
            self._conns = {
                t: self._writer.add_connection(
                    t, msgtype, typestore=store, offered_qos_profiles=[LATCHED_QOS] if t in latched else ()
                )
                for t, msgtype in topics.items()
            }
        except (WriterError, OSError, KeyError) as e:
            self.abort(remove=not isinstance(e, WriterError))  # an existing folder is not ours to remove
            raise BagError(f"cannot create bag {self.folder}: {type(e).__name__}: {e}") from e
        self._open = True

    def write(self, topic: str, log_ns: int, cdr: bytes) -> None:
        """Append one serialized message of ``topic`` received at ``log_ns`` (ns since the epoch).

        Raises:
            BagError: the disk is full or the file cannot be written (the bag is unusable then).
            KeyError: a topic that was not registered.
        """
        conn = self._conns[topic]
        try:
            self._writer.write(conn, int(log_ns), cdr)
        except OSError as e:
            raise BagError(f"writing {self.mcap_path} failed: {e}") from e
        self.counts[topic] += 1

    def close(self) -> int:
        """Write the MCAP summary and ``metadata.yaml``; returns the bag's size in bytes.

        Raises:
            BagError: finishing the files failed (disk full).
        """
        if not self._open:
            return 0
        try:
            self._writer.close()
        except OSError as e:
            raise BagError(f"finishing {self.mcap_path} failed: {e}") from e
        finally:
            self._open = False
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())

    def abort(self, *, remove: bool = True) -> None:
        """Stop writing; with ``remove``, delete the partial folder (on a full disk, the space goes
        back to the SQLite store next to it)."""
        self._open = False
        try:
            self._writer.abort()
        except Exception:
            log.debug("aborting bag %s", self.folder, exc_info=True)
        if remove:
            shutil.rmtree(self.folder, ignore_errors=True)
