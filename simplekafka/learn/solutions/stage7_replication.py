"""Stage 7 exercises: the replication rules as pure functions.

Read stages/stage7_cluster/README.md first. A leader decides, from numbers
alone, how far its high watermark (HW) may go, which followers leave or join
the in-sync replica set (ISR), and, with leader epochs, where a follower must
cut its log so that it never keeps records the leader does not have (KIP-101).
``simplekafka learn check 7`` compares these with SimpleKafka's broker and
replays KIP-101's two scenarios (a lost acknowledged write, diverged logs)
against them, printing the steps when a rule lets the scenario go wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

# --- exercise 1: the high watermark -------------------------------------------------------


def high_watermark(isr: Iterable[int], leader_id: int, leader_end_offset: int,
                   follower_end_offsets: Mapping[int, int]) -> int:
    """The offset up to which every in-sync replica holds the log: the lowest LEO in the ISR.

    The leader is in the ISR with ``leader_end_offset``; a follower missing
    from ``follower_end_offsets`` has not fetched yet and counts as 0. Records
    below the HW are committed: consumers may read them, acks=all answers them.
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

    A follower stays while it is at the leader's LEO, or was at it (its
    ``caught_up_ms``, 0 if never) no longer than ``lag_max_ms`` before ``now``.
    The leader never drops itself.
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

    Below the epoch's start it may still hold records of an older leader that
    this leader does not have; counting it in the ISR could commit them.
    """
    return (follower_end_offset >= high_watermark
            and follower_end_offset >= leader_epoch_start_offset)


# --- exercise 3: truncation by leader epoch (KIP-101) ------------------------------------


def end_offset_for_epoch(epochs: Sequence[tuple[int, int]], log_end_offset: int,
                         epoch: int) -> tuple[int, int]:
    """The answer to OffsetsForLeaderEpoch for ``epoch``: (epoch, end offset), as Kafka gives it.

    ``epochs`` are this replica's (epoch, start offset) entries, oldest first.
    For the latest epoch: (it, the log end offset). For an older one: the
    largest known epoch at or below it (or the asked epoch when none is) and
    the start offset of the first newer epoch. (-1, -1) when ``epoch`` is -1,
    newer than every known epoch, or nothing is known.
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

    The follower asked for ``asked_epoch`` (its latest) and the leader answered
    (``leader_epoch``, ``leader_end_offset``). Never the follower's own HW
    (cutting there loses acknowledged records: KIP-101's first scenario):

    * the leader knows the epoch asked: the leader's end of it;
    * it answers an older epoch: the smaller of its end and the follower's own
      end of that epoch (the follower's entries after it are another leader's);
    * it answers (-1, end): the leader's end; (-1, -1): keep everything.

    The result is never beyond the follower's log end offset.
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
