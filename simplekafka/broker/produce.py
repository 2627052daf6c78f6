"""Produce: validate each partition's batch header, append it at the leader, answer per acks.

The handler never looks inside a batch: the header says how many records it
holds, which producer sent it, and whether its CRC matches. acks=0 gets no
response at all; acks=1 is answered after the leader's append; acks=all (-1)
is refused before appending when the ISR is smaller than min.insync.replicas,
and otherwise answered once the high watermark has passed the batch (with one
broker, at once), or with REQUEST_TIMED_OUT after timeout_ms.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer

from simplekafka.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

FIRST_MAGIC_V2_VERSION = 3


class ProduceHandler:
    """ApiKey.PRODUCE: see the module docstring."""

    def __init__(self, broker: Any):
        self.broker = broker

    def __call__(self, context: Any, request: Any) -> dict | defer.Deferred | None:
        acks = request.acks
        version = context.api_version
        responses = []
        waits: list[tuple[dict, defer.Deferred]] = []
        for topic in request.topic_data:
            partition_responses = []
            for data in topic.partition_data:
                response, wait = self._produce_partition(topic.name, data, acks, version)
                partition_responses.append(response)
                if wait is not None:
                    waits.append((response, wait))
            responses.append({"name": topic.name, "partition_responses": partition_responses})
        body = {"responses": responses, "throttle_time_ms": 0}
        if acks == 0:
            return None
        if not waits:
            return body
        return self._wait_for_acks(body, waits, request.timeout_ms)

    def _produce_partition(self, topic: str, data: Any, acks: int,
                           version: int) -> tuple[dict, defer.Deferred | None]:
        response = {"index": data.index, "error_code": ErrorCode.NONE, "base_offset": -1,
                    "log_append_time_ms": -1, "log_start_offset": -1}
        if version < FIRST_MAGIC_V2_VERSION:
            response["error_code"] = ErrorCode.UNSUPPORTED_VERSION
            return response, None
        if acks not in (0, 1, -1):
            response["error_code"] = ErrorCode.INVALID_REQUIRED_ACKS
            return response, None
        config = self.broker.config
        try:
            partition = self.broker.replica_manager.leader_partition(topic, data.index)
            min_insync = self._min_insync(topic)
            result = partition.append_as_leader(
                data.records, acks, min_insync, config["message.max.bytes"], version)
        except KafkaError as exc:
            if exc.error_code not in (ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                log.info("produce to %s-%d refused: %s (%s)", topic, data.index,
                         exc.error_code.name, exc)
            response["error_code"] = exc.error_code
            response["error_message"] = exc.reason or exc.error_code.name
            return response, None
        except Exception:
            log.exception("produce to %s-%d failed", topic, data.index)
            response["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
            return response, None
        response["base_offset"] = result.base_offset
        response["log_start_offset"] = result.log_start_offset
        if acks == -1 and partition.high_watermark <= result.last_offset:
            return response, partition.wait_for_high_watermark(result.last_offset + 1,
                                                               min_insync)
        return response, None

    def _min_insync(self, topic: str) -> int:
        overrides = getattr(self.broker, "topic_config", None)
        if overrides is not None:
            value = overrides(topic).get("min.insync.replicas")
            if value is not None:
                return int(value)
        return self.broker.config.min_insync_replicas

    def _wait_for_acks(self, body: dict, waits: list[tuple[dict, defer.Deferred]],
                       timeout_ms: int) -> defer.Deferred:
        """Answer when every acks=all partition's HW passed its batch, or at the timeout."""
        reactor = self.broker.reactor
        finished: defer.Deferred = defer.Deferred()
        remaining = [len(waits)]

        def one_done(code: ErrorCode, response: dict) -> None:
            if code != ErrorCode.NONE and response["error_code"] == ErrorCode.NONE:
                response["error_code"] = code
            remaining[0] -= 1
            if remaining[0] == 0 and not finished.called:
                if timer.active():
                    timer.cancel()
                finished.callback(body)

        def time_out() -> None:
            for response, wait in waits:
                if not wait.called:
                    response["error_code"] = ErrorCode.REQUEST_TIMED_OUT
                    wait.callback(ErrorCode.REQUEST_TIMED_OUT)  # the partition forgets it
            if not finished.called:
                finished.callback(body)

        timer = reactor.callLater(max(timeout_ms, 0) / 1000.0, time_out)
        for response, wait in waits:
            wait.addCallback(one_done, response)
        return finished
