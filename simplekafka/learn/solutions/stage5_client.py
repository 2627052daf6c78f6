"""Stage 5 exercises: the client's connection core, routing to leaders, retries.

Read stages/stage5_client/README.md first. You write real pieces of
``simplekafka.client``, as methods of subclasses of its classes, so
everything around them is SimpleKafka's own:

* ``ConnectionCore`` (``simplekafka.client.connection``): the sans-I/O state
  of one broker connection. You write how a request goes on the wire
  (``_write``: correlation ids, the in-flight queue) and how bytes coming
  back become responses (``receive_data`` and ``_decode``: frames split
  anywhere, answers matched to requests). The handshake, versions, SASL,
  ``send_request`` and ``data_to_send`` are given; they call your methods.
* ``KafkaClient`` (``simplekafka.client.client``): you write routing to a
  partition's leader (``leader_for``) and the retry loop every operation
  runs in (``call_with_retries``), with ``needs_metadata_refresh``, the
  rule for which errors mean the cached cluster picture is out of date.

``simplekafka learn check 5`` drives your core with bytes split at every
position, then over a real socket to a real SimpleKafka broker, and replays
scripted clusters (leaders that move, brokers that answer errors) against
your client on a fake clock, printing the timeline up to the first step
that differs from SimpleKafka's (the fake clock stands in for this
module's ``time`` and ``Deadline``: sleep with ``time.sleep``). Once an
exercise passes, ``learn cluster`` and later stages run with your methods in
place of SimpleKafka's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from simplekafka.client import client as _client
from simplekafka.client import connection as _connection
from simplekafka.client.client import Deadline
from simplekafka.client.connection import MAX_CORRELATION_ID, InFlightRequest, Response
from simplekafka.client.errors import (
    ErrorCode,
    KafkaConnectionError,
    KafkaError,
    LeaderNotAvailableError,
    NoBrokersAvailableError,
    UnknownTopicOrPartitionError,
)
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.fields import Struct
from simplekafka.protocol.framing import encode_frame
from simplekafka.protocol.messages import decode_response, encode_request

T = TypeVar("T")


def decode_answer(request: InFlightRequest, frame: bytes) -> tuple[int, Struct]:
    """Decode one response frame (without its length prefix) as the answer to ``request``.

    Returns (correlation id, body Struct). Given: a broker that does not know
    our ApiVersions version answers in v0 format, which this handles; any
    other frame that does not decode raises KafkaConnectionError.
    """
    try:
        return decode_response(request.api_key, request.api_version, frame)
    except ProtocolError as exc:
        if request.api_key != ApiKey.API_VERSIONS or request.api_version == 0:
            raise KafkaConnectionError(
                f"undecodable {request.api_key.name} v{request.api_version} response: {exc}"
            ) from exc
        return decode_response(request.api_key, 0, frame)


class ConnectionCore(_connection.ConnectionCore):
    """One broker connection's protocol state, no I/O; the wire methods are yours.

    The given ``__post_init__`` sets up the state your methods share:

    * ``self.client_id``: the client id every request header carries;
    * ``self._next_correlation_id``: the id the next request gets (0 at first);
    * ``self._outbox``: a list of frames that ``data_to_send()`` hands out;
    * ``self._in_flight``: a deque of the requests sent and not yet answered,
      oldest first (Kafka answers one connection's requests in order);
    * ``self._completed_without_response``: requests sent that get no answer;
    * ``self._decoder``: a ``FrameDecoder`` (``simplekafka.protocol.framing``)
      whose ``feed(data)`` returns the complete frames in ``data`` plus what
      it kept of earlier reads.
    """

    # -- exercise 1: requests out -----------------------------------------------------

    def _write(self, request: InFlightRequest, version: int) -> None:
        """Put ``request`` on the wire at API ``version``: one framed request in the outbox.

        ``request.body`` is a dict (or Struct), or a callable taking the version
        and returning one. Record ``version`` in ``request.api_version``; give
        the request the next correlation id (``request.correlation_id``):
        ids count up from ``self._next_correlation_id`` by one per request and,
        after ``MAX_CORRELATION_ID`` (2**31 - 1), start again at 0. Encode
        with ``encode_request(api_key, version, correlation_id, self.client_id,
        body)``, frame with ``encode_frame`` and append to ``self._outbox``.
        A request that expects a response joins the end of ``self._in_flight``;
        one that does not (``expect_response`` False: acks=0 produce) goes to
        ``self._completed_without_response`` instead.
        """
        body = request.body(version) if callable(request.body) else request.body
        request.api_version = version
        request.correlation_id = self._next_correlation_id
        self._next_correlation_id = (self._next_correlation_id + 1) % (MAX_CORRELATION_ID + 1)
        payload = encode_request(
            request.api_key, version, request.correlation_id, self.client_id, body
        )
        self._outbox.append(encode_frame(payload))
        if request.expect_response:
            self._in_flight.append(request)
        else:
            self._completed_without_response.append(request)

    # -- exercise 2: bytes in, responses out ---------------------------------------

    def receive_data(self, data: bytes) -> list[Response]:
        """Feed bytes from the wire, split anywhere; return the responses they complete.

        ``data`` may hold part of a frame, a frame's end and the next one's
        start, or several frames: ``self._decoder.feed(data)`` returns every
        frame now complete. A frame the decoder refuses (ProtocolError: a
        length above ``max_frame_bytes``) raises KafkaConnectionError
        ("bad frame from broker: ..."). Each frame goes through ``_decode``
        in order; the responses it returns (None for internal answers) come
        back in that order.
        """
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as exc:
            raise KafkaConnectionError(f"bad frame from broker: {exc}") from exc
        responses: list[Response] = []
        for frame in frames:
            response = self._decode(frame)
            if response is not None:
                responses.append(response)
        return responses

    def _decode(self, frame: bytes) -> Response | None:
        """The answer in ``frame`` to the oldest request in flight, which it takes off the queue.

        No request in flight: raise KafkaConnectionError("broker sent a
        response to no request"). Decode with ``decode_answer(request,
        frame)``; when the answer's correlation id is not the request's, the
        connection cannot be trusted: raise KafkaConnectionError(
        f"correlation id mismatch: expected {request's id}, got {answer's id}").
        An internal request's answer (``request.internal``: the handshake and
        SASL login) is for the core itself: pass it to
        ``self._handle_handshake(request, body)`` when ``request.api_key`` is
        API_VERSIONS, else to ``self._handle_sasl(request, body)``, and return
        None. Any other answer: ``Response(request, body)``.
        """
        if not self._in_flight:
            raise KafkaConnectionError("broker sent a response to no request")
        request = self._in_flight.popleft()
        correlation_id, body = decode_answer(request, frame)
        if correlation_id != request.correlation_id:
            raise KafkaConnectionError(
                f"correlation id mismatch: expected {request.correlation_id}, got {correlation_id}"
            )
        if request.internal:
            if request.api_key == ApiKey.API_VERSIONS:
                self._handle_handshake(request, body)
            else:
                self._handle_sasl(request, body)
            return None
        return Response(request, body)


# -- exercise 4: which errors mean the metadata is stale -----------------------------


def needs_metadata_refresh(error: BaseException) -> bool:
    """True when ``error`` means the cached leaders or topics may be out of date.

    A lost connection (any KafkaConnectionError, NoBrokersAvailableError
    included) does; so does an error whose ``error_code`` (absent on most
    exceptions: use getattr) is one of NOT_LEADER_OR_FOLLOWER,
    LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
    UNKNOWN_LEADER_EPOCH, NOT_CONTROLLER, REPLICA_NOT_AVAILABLE or
    KAFKA_STORAGE_ERROR. Nothing else (a timeout, REQUEST_TIMED_OUT, a
    ValueError) does.
    """
    if isinstance(error, KafkaConnectionError):
        return True
    return getattr(error, "error_code", None) in {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }


class KafkaClient(_client.KafkaClient):
    """SimpleKafka's client with routing and retries written by you.

    What your methods use (given): ``self.metadata``, the cached cluster
    (``ClusterMetadata``: ``needs_update()``, ``request_update()``,
    ``leader_for(topic, partition)``, ``broker(node_id)``,
    ``partitions_for(topic)``); ``self.refresh_metadata(None, timeout_ms)``,
    which asks a broker for every topic and caches the answer, raising
    NoBrokersAvailableError when none answers; ``self._refresh_budget(deadline)``;
    ``self.request_timeout_ms``, ``self.retry_backoff_ms``,
    ``self.retry_backoff_max_ms``; ``Deadline(seconds)`` with ``remaining(cap)``
    and ``expired``; ``time.sleep``.
    """

    # -- exercise 3: routing to the leader ---------------------------------------------

    def leader_for(self, topic: str, partition: int, timeout_ms: int | None = None) -> int:
        """The node id leading ``topic``/``partition``: where its Produce and Fetch go.

        Within a ``Deadline`` of ``timeout_ms`` (``self.request_timeout_ms`` when
        None), loop: refresh (``self.refresh_metadata(None,
        self._refresh_budget(deadline))``) when ``self.metadata.needs_update()``
        and on every pass after the first. A NoBrokersAvailableError from that
        refresh is raised on the first pass and ignored after. Return the
        cached leader once there is one (``self.metadata.leader_for``: None
        while leaderless) that ``self.metadata.broker`` knows. Otherwise, when
        the deadline has expired, raise (with these messages)
        UnknownTopicOrPartitionError(f"topic {topic!r} does not exist") when
        ``self.metadata.partitions_for(topic)`` is None,
        UnknownTopicOrPartitionError(f"topic {topic!r} has no partition
        {partition}") when the partition is not among them, else
        LeaderNotAvailableError(f"{topic}-{partition} has no leader"); when
        it has not, sleep ``deadline.remaining(self.retry_backoff_ms / 1000)``
        and go round.
        """
        deadline = Deadline((self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000)
        asked = False
        while True:
            if self.metadata.needs_update() or asked:
                try:
                    self.refresh_metadata(None, self._refresh_budget(deadline))
                except NoBrokersAvailableError:
                    if not asked:
                        raise
            leader = self.metadata.leader_for(topic, partition)
            if leader is not None and self.metadata.broker(leader) is not None:
                return leader
            if deadline.expired:
                partitions = self.metadata.partitions_for(topic)
                if partitions is None:
                    raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
                if partition not in partitions:
                    raise UnknownTopicOrPartitionError(
                        f"topic {topic!r} has no partition {partition}"
                    )
                raise LeaderNotAvailableError(f"{topic}-{partition} has no leader")
            asked = True
            time.sleep(deadline.remaining(self.retry_backoff_ms / 1000))

    # -- exercise 4: retries ------------------------------------------------------------

    def call_with_retries(
        self,
        operation: Callable[[Deadline], T],
        timeout_ms: int | None = None,
        retries: int | None = None,
    ) -> T:
        """Run ``operation(deadline)`` until it returns; retry what may succeed next time.

        The deadline is ``Deadline(timeout_ms / 1000)`` (``self.request_timeout_ms``
        when None). What the operation returns is returned. What it raises:

        * not a KafkaError (a ValueError, say): raised at once;
        * a KafkaError that is not ``retriable`` (the ErrorCode table: e.g.
          MESSAGE_TOO_LARGE, TOPIC_AUTHORIZATION_FAILED, NoBrokersAvailableError),
          or the deadline has expired, or this was retry number ``retries``
          already (``retries`` None: no limit): raised;
        * otherwise: if ``needs_metadata_refresh(error)``, mark the cache stale
          (``self.metadata.request_update()``); sleep
          ``deadline.remaining(backoff)``, backoff starting at
          ``self.retry_backoff_ms / 1000`` and doubling after each sleep up to
          ``self.retry_backoff_max_ms / 1000``; then, if
          ``self.metadata.needs_update()``, refresh
          (``self.refresh_metadata(None, max(1, int(deadline.remaining() * 1000)))``):
          should that raise a KafkaError, raise the operation's error when the
          deadline has expired, else go on; run the operation again.
        """
        deadline = Deadline((self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000)
        backoff = self.retry_backoff_ms / 1000
        attempt = 0
        while True:
            try:
                return operation(deadline)
            except KafkaError as exc:
                attempt += 1
                out_of_retries = retries is not None and attempt > retries
                if not exc.retriable or deadline.expired or out_of_retries:
                    raise
                if needs_metadata_refresh(exc):
                    self.metadata.request_update()
                time.sleep(deadline.remaining(backoff))
                backoff = min(backoff * 2, self.retry_backoff_max_ms / 1000)
                if self.metadata.needs_update():
                    try:
                        self.refresh_metadata(None, max(1, int(deadline.remaining() * 1000)))
                    except KafkaError:
                        if deadline.expired:
                            raise exc from None
