"""Stage 6 exercises: where a record goes, when a batch leaves, how a consumer joins a group.

Read stages/stage6_apis/README.md first. Three pieces of the client side:

1. the Java client's key hash (murmur2) and partitioner, bit for bit, so a key
   lands where every other Kafka client puts it;
2. a record accumulator: records wait in one batch per partition until the
   batch is full or has lingered long enough;
3. a consumer group member's rebalance cycle (JoinGroup, SyncGroup,
   Heartbeat), run against the group coordinator of a real SimpleKafka broker.

``simplekafka learn check 6`` compares 1 and 2 with SimpleKafka's producer
(``simplekafka.producer.partitioner`` and ``.accumulator``) step by step, and
runs several of your members in one group on a real broker, checking every
request they send and the partitions they end up with.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from simplekafka.client.errors import error_for
from simplekafka.client.group_protocol import (
    PROTOCOL_TYPE,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from simplekafka.consumer.assignors import RangeAssignor
from simplekafka.producer import partitioner as given_partitioner
from simplekafka.producer.accumulator import BATCH_OVERHEAD
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ErrorCode
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.records import Record
from simplekafka.protocol.structs import TopicPartition

# --- exercise 1: murmur2 and the default partitioner -------------------------------------

M = 0x5BD1E995  # murmur2's multiplier
SEED = 0x9747B28C  # Kafka's seed
MASK32 = 0xFFFFFFFF  # Java ints wrap at 32 bits; Python's do not


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2(data)``: a 32-bit hash, returned as Java's signed int.

    h starts as SEED ^ len(data). Each whole 4-byte word k (little-endian)
    is mixed in: k *= M; k ^= k >>> 24; k *= M; h *= M; h ^= k. The 1 to 3
    bytes left over (the tail) go in as Java's switch falls through: with 3
    left, h ^= byte[2] << 16; with 2 or more, h ^= byte[1] << 8; with 1 or
    more, h ^= byte[0] and h *= M. Then h ^= h >>> 13; h *= M; h ^= h >>> 15.
    Every product and shift is of unsigned 32-bit values (mask each product
    with MASK32). The result is the 32 bits read as a signed int:
    ``murmur2(b"21") == -973932308``, ``murmur2(b"abc") == 479470107``.
    """
    length = len(data)
    h = (SEED ^ length) & MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * M) & MASK32
        k ^= k >> 24
        k = (M * k) & MASK32
        h = ((h * M) & MASK32) ^ k
    left = length - whole
    if left == 3:
        h ^= data[whole + 2] << 16
    if left >= 2:
        h ^= data[whole + 1] << 8
    if left >= 1:
        h ^= data[whole]
        h = (h * M) & MASK32
    h ^= h >> 13
    h = (h * M) & MASK32
    h ^= h >> 15
    return h - (1 << 32) if h >= 0x80000000 else h


def partition_for_key(key: bytes, partition_count: int) -> int:
    """The partition the Java client's default partitioner picks for ``key``.

    ``(murmur2(key) & 0x7fffffff) % partition_count``: the sign bit cleared
    (Java's ``Utils.toPositive``, not ``abs()``), then the remainder. Mind the
    parentheses: ``&`` binds looser than ``%`` in Python (and Java).
    """
    return (murmur2(key) & 0x7FFFFFFF) % partition_count


class DefaultPartitioner(given_partitioner.DefaultPartitioner):
    """SimpleKafka's partitioner with your ``__call__``.

    Given (inherited): ``self._sticky`` (topic -> its sticky partition),
    ``self._lock``, ``self._rng`` (a ``random.Random``), and ``on_new_batch``,
    which the producer calls when the sticky partition's batch is sent and
    which moves ``self._sticky[topic]`` to another partition.
    """

    def __call__(self, topic: str, key: bytes | None, partitions: Sequence[int]) -> int:
        """The partition of a record for ``topic`` with ``key`` (``partitions``: its partitions).

        A key: ``partitions[partition_for_key(key, len(partitions))]``. No key
        (None; an empty key b"" is a key): the topic's sticky partition
        ``self._sticky[topic]`` while it is one of ``partitions``; when there
        is none yet (or it is gone), pick ``self._rng.choice(list(partitions))``
        (under ``self._lock``), store it as the topic's sticky partition and
        return it. Keyed records leave the sticky partition alone.
        """
        if key is not None:
            return partitions[partition_for_key(key, len(partitions))]
        sticky = self._sticky.get(topic)
        if sticky is None or sticky not in partitions:
            with self._lock:
                sticky = self._rng.choice(list(partitions))
                self._sticky[topic] = sticky
        return sticky


# --- exercise 2: the record accumulator -------------------------------------------------


@dataclass(eq=False)
class Batch:
    """The records of one partition that travel in one RecordBatch (given)."""

    tp: TopicPartition
    created: float  # the clock when its first record came
    records: list[Record] = field(default_factory=list)
    size: int = BATCH_OVERHEAD  # bytes: the batch header, then each record's size


class Accumulator:
    """Records wait here, one open batch per partition, until the sender takes them.

    The clock is passed in (``now``, in seconds, as ``time.monotonic()``):
    nothing here sleeps or reads the time. ``queues`` holds each partition's
    batches, oldest first, the newest one open for appends; a partition stays
    in ``queues`` (in the order it first got a record) once it is there.
    """

    def __init__(self, batch_size: int = 16_384, linger_ms: float = 5.0) -> None:
        self.batch_size = batch_size
        self.linger = linger_ms / 1000  # seconds
        self.queues: dict[TopicPartition, deque[Batch]] = {}

    def append(self, tp: TopicPartition, record: Record, size: int, now: float) -> Batch:
        """Put ``record`` (``size`` bytes) into ``tp``'s open batch; return that batch.

        The open batch is the newest in ``tp``'s queue. A new batch (created
        at ``now``, of BATCH_OVERHEAD bytes) is started when the queue is
        empty, or when the record would take the open batch over
        ``batch_size`` bytes (a batch may reach ``batch_size`` exactly). A
        record bigger than ``batch_size`` on its own still goes, alone in a
        new batch. The record is appended to the batch's ``records`` and its
        size added to the batch's ``size``.
        """
        queue = self.queues.setdefault(tp, deque())
        if not queue or queue[-1].size + size > self.batch_size:
            queue.append(Batch(tp, now))
        batch = queue[-1]
        batch.records.append(record)
        batch.size += size
        return batch

    def ready(self, now: float) -> tuple[list[TopicPartition], float]:
        """The partitions whose oldest batch may go at ``now``, and how long the sender may sleep.

        A partition's oldest batch is ready when it is full (``size >=
        batch_size``), when a newer batch follows it (it can take no more
        records), or when it has lingered: ``created + linger <= now``.
        Partitions in ``queues`` order; empty queues are skipped. The second
        value is the time in seconds until the first not-ready oldest batch
        has lingered (``created + linger - now``), or 3600.0 when there is
        none.
        """
        ready = []
        wait = 3600.0
        for tp, queue in self.queues.items():
            if not queue:
                continue
            head = queue[0]
            if len(queue) > 1 or head.size >= self.batch_size:
                due = now
            else:
                due = head.created + self.linger
            if due <= now:
                ready.append(tp)
            else:
                wait = min(wait, due - now)
        return ready, wait

    def drain(self, now: float) -> list[Batch]:
        """Take the oldest batch of every partition ready at ``now`` out of its queue.

        One batch per ready partition (a partition's batches go in order,
        one request at a time), in the order ``ready`` lists them. A drained
        open batch takes no more records: the next append starts a new one.
        """
        ready, _wait = self.ready(now)
        return [self.queues[tp].popleft() for tp in ready]


# --- exercise 3: a consumer group member ------------------------------------------------

Send = Callable[[ApiKey, dict], Struct]


class Member:
    """One consumer's membership of a group, driven by ``join`` and ``heartbeat``.

    ``send(api_key, body)`` sends a request to the group's coordinator
    (SimpleKafka's ``KafkaClient.request``) and returns the decoded answer.
    The request bodies, the leader's assignment (``plan``) and ``leave`` are
    given. The state: ``member_id`` ("" before the coordinator gave one),
    ``generation`` (-1 when not in a generation), ``leader_id`` and
    ``assignment`` (this member's partitions, sorted).
    """

    def __init__(self, send: Send, group_id: str, topics: list[str],
                 partition_counts: Callable[[set[str]], Mapping[str, int]],
                 session_timeout_ms: int = 10_000, rebalance_timeout_ms: int = 3_000) -> None:
        self.send = send
        self.group_id = group_id
        self.topics = topics
        self.partition_counts = partition_counts
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.assignor = RangeAssignor()
        self.member_id = ""
        self.generation = -1
        self.leader_id = ""
        self.assignment: list[TopicPartition] = []

    def join_body(self) -> dict:
        """JoinGroup, with this member's id ("" the first time) and its subscription."""
        subscription = encode_subscription(Subscription(sorted(self.topics)))
        return {"group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                "group_instance_id": None, "protocol_type": PROTOCOL_TYPE,
                "protocols": [{"name": self.assignor.name, "metadata": subscription}]}

    def plan(self, join_answer: Struct) -> list[dict]:
        """The leader's SyncGroup assignments: the assignor over every member's subscription."""
        subscriptions = {m.member_id: decode_subscription(m.metadata)
                         for m in join_answer.members}
        topics = {t for s in subscriptions.values() for t in s.topics}
        plan = self.assignor.assign(subscriptions, self.partition_counts(topics))
        return [{"member_id": member, "assignment": encode_assignment(partitions)}
                for member, partitions in sorted(plan.items())]

    def sync_body(self, assignments: list[dict]) -> dict:
        """SyncGroup for this member's generation; ``assignments`` only from the leader."""
        return {"group_id": self.group_id, "generation_id": self.generation,
                "member_id": self.member_id, "group_instance_id": None,
                "assignments": assignments}

    def heartbeat_body(self) -> dict:
        return {"group_id": self.group_id, "generation_id": self.generation,
                "member_id": self.member_id, "group_instance_id": None}

    def leave(self) -> None:
        """LeaveGroup, so the others rebalance now rather than after our session timeout."""
        if self.member_id:
            self.send(ApiKey.LEAVE_GROUP, {
                "group_id": self.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None}]})
        self.member_id, self.generation, self.assignment = "", -1, []

    def join(self) -> list[TopicPartition]:
        """(Re)join the group; return (and keep in ``assignment``) this member's partitions.

        Repeat until a SyncGroup succeeds: send JoinGroup (``join_body``).
        Its answer's error code decides:

        * MEMBER_ID_REQUIRED: take the answer's ``member_id``, join again with it;
        * UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: forget who we were
          (``member_id`` "", ``generation`` -1), join again;
        * REBALANCE_IN_PROGRESS: join again as we are;
        * NONE: keep the answer's ``member_id``, ``generation_id`` (as
          ``generation``) and ``leader`` (as ``leader_id``). The leader (the
          answer's ``leader`` is our ``member_id``) sends ``plan(answer)`` in
          SyncGroup (``sync_body``); every other member sends ``[]``;
        * anything else: ``raise error_for(code, what)``.

        SyncGroup's answer: NONE gives our partitions,
        ``decode_assignment(answer.assignment)``; its REBALANCE_IN_PROGRESS,
        UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION mean the same as for
        JoinGroup (then join again); anything else raises as above.
        """
        while True:
            answer = self.send(ApiKey.JOIN_GROUP, self.join_body())
            code = ErrorCode.of(answer.error_code)
            if code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = answer.member_id
                continue
            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                self.member_id, self.generation = "", -1
                continue
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                continue
            if code != ErrorCode.NONE:
                raise error_for(code, f"joining group {self.group_id!r}")
            self.member_id = answer.member_id
            self.generation = answer.generation_id
            self.leader_id = answer.leader
            assignments = self.plan(answer) if answer.leader == self.member_id else []
            synced = self.send(ApiKey.SYNC_GROUP, self.sync_body(assignments))
            code = ErrorCode.of(synced.error_code)
            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                self.member_id, self.generation = "", -1
                continue
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                continue
            if code != ErrorCode.NONE:
                raise error_for(code, f"syncing group {self.group_id!r}")
            self.assignment = decode_assignment(synced.assignment)
            return self.assignment

    def heartbeat(self) -> bool:
        """One Heartbeat (``heartbeat_body``): True while we stay, False when we must rejoin.

        NONE: True. REBALANCE_IN_PROGRESS: False, keeping ``member_id`` and
        ``generation`` (the coordinator waits for us to join again under the
        same id). UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: False, and forget
        who we were (``member_id`` "", ``generation`` -1). Anything else:
        ``raise error_for(code, what)``.
        """
        answer = self.send(ApiKey.HEARTBEAT, self.heartbeat_body())
        code = ErrorCode.of(answer.error_code)
        if code == ErrorCode.NONE:
            return True
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            return False
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.member_id, self.generation = "", -1
            return False
        raise error_for(code, f"heartbeat in group {self.group_id!r}")
