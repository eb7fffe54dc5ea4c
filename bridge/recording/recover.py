"""Recover a recording whose writer was killed: a new, whole rosbag2 folder from the chunks that survived.

A killed writer leaves an MCAP with its header and every chunk written so far, perhaps a partial
last chunk, and no summary, footer or closing magic: plain readers refuse it. MCAP is made to be read
front to back (MCAP specification, "Data section"): the ``mcap`` library's ``StreamReader`` yields the
records of every whole chunk in order and fails at the cut. Those records are written again, with
their log times, into a new bag (``trial_bag.TrialBag``: MCAP with summary, index and
``metadata.yaml``, readable by ``mcap``, rosbags and ``ros2 bag``), which then takes the old file's
place; what the partial last chunk held is lost (the writer closes a chunk every 1 MiB of messages:
about a second of compressed RGB-D at 5 frames/s).

Replacing never loses the old file before the new one is whole: the new bag is written beside the
old one (``.recover-<uid>/<uid>``), the old folder is moved into that folder (``truncated``), the
new one into its place, and only then is the old one deleted. A run killed while writing leaves
``<uid>`` as it was (a later run starts again from it); one killed between the two renames, a
moment, leaves both inside ``.recover-<uid>/`` and no ``<uid>``: the check then reports the trial's
recording as missing, and moving ``.recover-<uid>/<uid>`` back by hand ends the swap.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from pointlab.bridge.recording.layout import check_trial_id
from pointlab.bridge.recording.robot_tf import ROBOT_DESCRIPTION
from pointlab.bridge.recording.static_tf import TF_STATIC
from pointlab.bridge.recording.trial_bag import BagError, TrialBag
from pointlab.bridge.errors import BridgeError

__all__ = ["summarize_bag", "Recovered", "RecoveryError", "recover_bag"]

log = logging.getLogger(__name__)


class RecoveryError(BridgeError, RuntimeError):
    """Nothing could be recovered (no MCAP, no whole chunk, or the new bag could not be written)."""


@dataclass(frozen=True)
class Recovered:
    """What ``recover_bag`` kept: ``messages`` per topic, the new file's size, why reading stopped."""

    messages: dict[str, int]
    mcap_bytes: int
    stopped_at: str
    last_log_ns: int = 0  # the log time of the last message kept

    @property
    def total(self) -> int:
        return sum(self.messages.values())


def recover_bag(folder: str | Path) -> Recovered:
    """Rewrite the rosbag2 folder ``folder`` (``<uid>/<uid>.mcap``) from the whole chunks of its MCAP.

    Raises:
        RecoveryError: no MCAP there, no message in a whole chunk, or writing the new bag failed (the
            old folder is then untouched).
    """
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader

    folder = Path(folder)
    uid = check_trial_id(folder.name)
    mcap = folder / f"{uid}.mcap"
    if not mcap.is_file():
        raise RecoveryError(f"{mcap} not found")
    work = folder.parent / f".recover-{uid}"
    shutil.rmtree(work, ignore_errors=True)  # an earlier run's leftovers: ``folder`` is the source
    work.mkdir()
    schemas: dict[int, str] = {}
    topics: dict[int, tuple[str, str]] = {}  # channel id -> (topic, type)
    bag: TrialBag | None = None
    stopped = "the end of the file"
    last = 0
    try:
        with mcap.open("rb") as f:
            try:
                for rec in StreamReader(f, skip_magic=False).records:
                    if isinstance(rec, Schema):
                        schemas[rec.id] = rec.name
                    elif isinstance(rec, Channel) and rec.schema_id in schemas:
                        topics[rec.id] = (rec.topic, schemas[rec.schema_id])
                    elif isinstance(rec, Message) and rec.channel_id in topics:
                        if bag is None:  # the writer registers every connection before any message
                            bag = TrialBag(work / uid, dict(topics.values()), latched=(TF_STATIC, ROBOT_DESCRIPTION))
                        topic = topics[rec.channel_id][0]
                        if topic in bag.counts:
                            bag.write(topic, rec.log_time, rec.data)
                            last = max(last, rec.log_time)
            except BagError:
                raise
            except Exception as e:  # the cut: a short read, a partial record, a bad length...
                stopped = (
                    f"the file is cut inside a record after byte {f.tell()} of {mcap.stat().st_size} "
                    f"({type(e).__name__})"
                )
        if bag is None or not any(bag.counts.values()):
            raise RecoveryError(f"{mcap}: no message in a whole chunk ({stopped})")
        size = bag.close()
        counts = {t: n for t, n in bag.counts.items() if n}
    except (BagError, OSError) as e:
        if bag is not None:
            bag.abort(remove=False)
        shutil.rmtree(work, ignore_errors=True)
        raise RecoveryError(f"recovering {mcap} failed: {e}") from e
    except RecoveryError:
        shutil.rmtree(work, ignore_errors=True)
        raise
    folder.rename(work / "truncated")
    (work / uid).rename(folder)
    shutil.rmtree(work, ignore_errors=True)
    log.info("recovered %s: %d messages (%s)", folder, sum(counts.values()), stopped)
    return Recovered(counts, size, stopped, last)


def summarize_bag(folder: str | Path) -> Recovered:
    """What a **whole** MCAP of the rosbag2 folder ``folder`` holds, from its summary section
    (messages per topic, the folder's size, the last log time), without rewriting anything.

    Raises:
        RecoveryError: no MCAP, or one whose summary cannot be read.
    """
    from mcap.reader import make_reader

    folder = Path(folder)
    mcap = folder / f"{check_trial_id(folder.name)}.mcap"
    try:
        with mcap.open("rb") as f:
            summary = make_reader(f).get_summary()
    except Exception as e:  # OSError, or the mcap library's own errors on a bad file
        raise RecoveryError(f"{mcap}: its summary cannot be read: {e}") from e
    if summary is None or summary.statistics is None:
        raise RecoveryError(f"{mcap}: no summary statistics")
    counts: dict[str, int] = {}
    for cid, n in summary.statistics.channel_message_counts.items():
        if n and cid in summary.channels:
            topic = summary.channels[cid].topic
            counts[topic] = counts.get(topic, 0) + n
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    return Recovered(counts, size, "a whole file", summary.statistics.message_end_time)
