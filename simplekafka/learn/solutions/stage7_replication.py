"""Stage 7 exercises: the replication rules as pure functions, then a follower's fetch loop.

Read stages/stage7_cluster/README.md first. A leader decides, from numbers
alone, how far its high watermark (HW) may go, which followers leave or join
the in-sync replica set (ISR), and, with leader epochs, where a follower must
cut its log so that it never keeps records the leader does not have (KIP-101).
Exercise 4 puts the rules to work in a follower's fetch loop, against a real
leader broker. ``simplekafka learn check 7`` compares exercises 1 to 3 with
SimpleKafka's broker over grids of cases, replays KIP-101's two scenarios (a
lost acknowledged write, diverged logs) against them, and runs your follower
step by step beside SimpleKafka's own, printing the steps up to the first one
that goes wrong. Once they pass, ``simplekafka learn cluster`` runs three
brokers with your exercises 1 to 3 inside.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from simplekafka.client import KafkaClient
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.storage import Log

# --- exercise 1: the high watermark -------------------------------------------------------


def high_watermark(isr: Iterable[int], leader_id: int, leader_end_offset: int,
                   follower_end_offsets: Mapping[int, int]) -> int:
    """The offset up to which every in-sync replica holds the log: the lowest LEO in the ISR.

    The leader always counts, with ``leader_end_offset`` (whether ``isr``
    lists it or not). Every other replica in ``isr`` counts with its entry in
    ``follower_end_offsets``; one missing there (it has not fetched since this
    leader took over) counts as 0. Replicas outside ``isr`` never count,
    whatever their LEO. Records below the HW are committed: consumers may read
    them, acks=all answers them.
    """
    ends = [leader_end_offset]
    for replica in isr:
        if replica != leader_id:
            ends.append(follower_end_offsets.get(replica, 0))
    return min(ends)


# --- exercise 2: who leaves the ISR, who joins it ----------------------------------------


def out_of_sync_replicas(isr: Iterable[int], leader_id: int, leader_end_offset: int,
                         follower_end_offsets: Mapping[int, int],
                         caught_up_ms: Mapping[int, float], now: float,
                         lag_max_ms: float) -> list[int]:
    """The ISR followers to drop, in ISR order.

    A follower is dropped when it is not at the leader's LEO (its entry in
    ``follower_end_offsets`` is below ``leader_end_offset``) and it was last
    there more than ``lag_max_ms`` before ``now`` (``now - caught_up_ms[it] >
    lag_max_ms``; exactly ``lag_max_ms`` keeps it). Unlike the high watermark's
    rule, a follower missing from ``follower_end_offsets`` is never at the
    LEO (not even when the leader's LEO is 0: it has not fetched), and one
    missing from ``caught_up_ms`` was last caught up at 0 ms. The leader is
    never dropped.
    """
    dropped = []
    for replica in isr:
        if replica == leader_id:
            continue
        if follower_end_offsets.get(replica, -1) >= leader_end_offset:
            continue
        if now - caught_up_ms.get(replica, 0.0) > lag_max_ms:
            dropped.append(replica)
    return dropped


def may_join_isr(follower_end_offset: int, high_watermark: int,
                 leader_epoch_start_offset: int) -> bool:
    """A follower joins once its LEO reaches the HW and the start of the leader's current epoch.

    True when ``follower_end_offset >= high_watermark`` and
    ``follower_end_offset >= leader_epoch_start_offset`` (equal is enough).
    Below the epoch's start it may still hold records of an older leader that
    this leader does not have; counting it in the ISR could commit them.
    """
    return (follower_end_offset >= high_watermark
            and follower_end_offset >= leader_epoch_start_offset)


# --- exercise 3: truncation by leader epoch (KIP-101) ------------------------------------


def end_offset_for_epoch(epochs: Sequence[tuple[int, int]], log_end_offset: int,
                         epoch: int) -> tuple[int, int]:
    """The answer to OffsetsForLeaderEpoch for ``epoch``: (epoch, end offset), as Kafka gives it.

    ``epochs`` are this replica's (epoch, start offset) entries, oldest first,
    both strictly increasing. The answer:

    * (-1, -1) when ``epoch`` is -1, when ``epochs`` is empty, or when
      ``epoch`` is newer than every known epoch (the leader cannot know where
      an epoch it never saw ends);
    * the latest known epoch: (it, ``log_end_offset``);
    * any older epoch, known or not: the largest known epoch at or below it
      (the asked epoch itself when every known epoch is newer), and the start
      offset of the first known epoch newer than the asked one.
    """
    if epoch < 0 or not epochs:
        return -1, -1
    if epoch == epochs[-1][0]:
        return epoch, log_end_offset
    higher = next((entry for entry in epochs if entry[0] > epoch), None)
    if higher is None:
        return -1, -1
    floor = [entry for entry in epochs if entry[0] <= epoch]
    return (floor[-1][0] if floor else epoch), higher[1]


def truncation_offset(epochs: Sequence[tuple[int, int]], log_end_offset: int,
                      asked_epoch: int, leader_epoch: int, leader_end_offset: int) -> int:
    """Where a follower cuts its log after asking the leader about its latest epoch.

    The follower (its ``epochs`` entries, oldest first, and ``log_end_offset``)
    asked for ``asked_epoch`` and the leader answered (``leader_epoch``,
    ``leader_end_offset``). Never the follower's own HW (cutting there loses
    acknowledged records: KIP-101's first scenario):

    * an answer with a -1 in it: (-1, end >= 0) cuts at that end; (-1, -1)
      and (epoch, -1) keep everything (the cut is ``log_end_offset``);
    * the leader's epoch is the one asked: the leader's end of it;
    * any other epoch (an older one): the smaller of the leader's end and the
      follower's own end of that epoch, ``end_offset_for_epoch(epochs,
      log_end_offset, leader_epoch)[1]`` (the follower's entries after it are
      another leader's); when that own answer is (-1, -1), the leader's end.

    The result is never beyond ``log_end_offset``: ``min(cut, log_end_offset)``.
    """
    if leader_epoch < 0 or leader_end_offset < 0:
        cut = leader_end_offset if leader_end_offset >= 0 else log_end_offset
    elif leader_epoch == asked_epoch:
        cut = leader_end_offset
    else:
        own_epoch, own_end = end_offset_for_epoch(epochs, log_end_offset, leader_epoch)
        if own_epoch < 0 or own_end < 0:
            own_end = leader_end_offset
        cut = min(leader_end_offset, own_end)
    return min(cut, log_end_offset)


# --- exercise 4: the follower's fetch loop, against a real leader --------------------------

FETCH_MAX_BYTES = 1  # one batch per fetch (the first batch always comes whole, KIP-74)
FETCH_MAX_WAIT_MS = 100


@dataclass(frozen=True)
class FetchAnswer:
    """The leader's answer to one Fetch for our partition."""

    error_code: int  # ErrorCode.NONE, or why there are no records
    high_watermark: int  # the leader's HW (-1 with an error)
    records: bytes  # whole batches from the fetch offset on, b"" when none


class Leader:
    """The partition's leader broker as a follower talks to it (given; SimpleKafka's client).

    ``replica_id`` is who the follower is: the leader counts its fetches as
    that replica's (its LEO, the ISR, the HW). ``leader_epoch`` is the epoch
    the leader leads in, sent as ``current_leader_epoch`` so that a stale
    leader or follower is refused (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH).
    """

    def __init__(self, client: KafkaClient, node_id: int, topic: str, partition: int,
                 replica_id: int, leader_epoch: int) -> None:
        self.client = client
        self.node_id = node_id
        self.topic = topic
        self.partition = partition
        self.replica_id = replica_id
        self.leader_epoch = leader_epoch

    def offsets_for_leader_epoch(self, epoch: int) -> tuple[int, int, int]:
        """Ask where ``epoch`` ends in the leader's log: (error code, epoch, end offset)."""
        body = {"replica_id": self.replica_id, "topics": [{"topic": self.topic, "partitions": [
            {"partition": self.partition, "current_leader_epoch": self.leader_epoch,
             "leader_epoch": epoch}]}]}
        answer = self.client.request(self.node_id, ApiKey.OFFSET_FOR_LEADER_EPOCH, body)
        found = answer.topics[0].partitions[0]
        return found.error_code, found.leader_epoch, found.end_offset

    def fetch(self, fetch_offset: int) -> FetchAnswer:
        """Fetch from ``fetch_offset`` as replica ``replica_id``: at most one batch."""
        body = {"replica_id": self.replica_id, "max_wait_ms": FETCH_MAX_WAIT_MS,
                "min_bytes": 1, "max_bytes": FETCH_MAX_BYTES, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": self.topic, "partitions": [{
                    "partition": self.partition, "current_leader_epoch": self.leader_epoch,
                    "fetch_offset": fetch_offset, "log_start_offset": -1,
                    "partition_max_bytes": FETCH_MAX_BYTES}]}],
                "forgotten_topics_data": [], "rack_id": ""}
        answer = self.client.request(self.node_id, ApiKey.FETCH, body)
        found = answer.responses[0].partitions[0]
        return FetchAnswer(found.error_code, found.high_watermark, bytes(found.records or b""))


class Follower:
    """One follower replica of one partition: its own Log, the leader it follows, its HW.

    The fetch loop is ``step()`` called over and over (given): truncation by
    leader epoch first, then fetches, as SimpleKafka's replica fetcher runs it
    (simplekafka/broker/replica_fetcher.py). ``follow`` is how the follower
    learns of a new leader or epoch (the controller's LeaderAndIsr).
    """

    def __init__(self, log: Log) -> None:
        self.log = log
        self.high_watermark = 0
        self.leader: Leader | None = None
        self.truncated = False  # truncation by epoch done for the leader followed

    def follow(self, leader: Leader) -> None:
        """A new leader or epoch: truncate by epoch before fetching from it."""
        self.leader = leader
        self.truncated = False

    def step(self) -> None:
        """One round of the fetch loop."""
        if self.truncated:
            self.fetch_once()
        else:
            self.truncate_once()

    def truncate_once(self) -> None:
        """One round of truncation by leader epoch (replication rule 4).

        * The log has no epoch yet (``self.log.leader_epochs.latest_epoch`` is
          -1): nothing to undo; send nothing, set ``self.truncated``.
        * Else ask the leader about that latest epoch
          (``self.leader.offsets_for_leader_epoch``). An answer with an error
          changes nothing (the next step asks again).
        * Else cut the log (``self.log.truncate_to``, which keeps everything
          when given an offset at or past the log end) at ``truncation_offset``
          (exercise 3) of the log's epoch entries
          (``self.log.leader_epochs.entries``), its log end offset, the epoch
          asked and the answer; lower ``self.high_watermark`` to the log end if
          it is above; set ``self.truncated`` (one round is enough: the cut
          removes every epoch after the one the leader answered).
        """
        latest = self.log.leader_epochs.latest_epoch
        if latest < 0:
            self.truncated = True
            return
        assert self.leader is not None, "follow() names the leader before any step"
        error, leader_epoch, end_offset = self.leader.offsets_for_leader_epoch(latest)
        if error != ErrorCode.NONE:
            return
        self.log.truncate_to(truncation_offset(
            self.log.leader_epochs.entries, self.log.log_end_offset, latest, leader_epoch,
            end_offset))
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        self.truncated = True

    def fetch_once(self) -> None:
        """One Fetch from the log end offset; append what comes; the HW follows the leader's.

        * Fetch from ``self.log.log_end_offset`` (``self.leader.fetch``).
        * ErrorCode.NONE: append the records as they are with
          ``self.log.append_as_follower`` (they keep the leader's offsets and
          epochs; b"" appends nothing), then ``self.high_watermark`` becomes the
          smaller of the answer's HW and the new log end offset (a follower
          never claims what it does not hold).
        * ErrorCode.OFFSET_OUT_OF_RANGE: our log end is past the leader's: the
          next step truncates by epoch again (``self.truncated = False``).
        * Any other error changes nothing (the next step fetches again).
        """
        assert self.leader is not None, "follow() names the leader before any step"
        answer = self.leader.fetch(self.log.log_end_offset)
        if answer.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self.truncated = False
            return
        if answer.error_code != ErrorCode.NONE:
            return
        self.log.append_as_follower(answer.records)
        self.high_watermark = min(answer.high_watermark, self.log.log_end_offset)
