"""The controller's requests to brokers, built from its context (Kafka's
``ControllerRequestBatch``): LeaderAndIsr, UpdateMetadata and StopReplica bodies.

Each is a ``Send``: (target broker, api key, api version, body); the
ControllerChannel encodes and delivers them, in order, per broker.
"""

from __future__ import annotations

from collections.abc import Iterable

from simplekafka.broker.controller.context import ControllerContext, TopicPartitionKey
from simplekafka.broker.metadata_cache import LEADER_DURING_DELETE
from simplekafka.protocol.api import ApiKey
from simplekafka.protocol.topic_ids import ZERO_ID

# The versions that carry topic IDs (KIP-516), as a Kafka 3.9 controller sends them
# (LeaderAndIsr v6 adds only the leader recovery state, always "recovered" here).
LEADER_AND_ISR_VERSION = 6
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 1
LEADER_AND_ISR_PARTITIONS = 1000  # partition states per LeaderAndIsr request
# Kafka's SecurityProtocol ids, as UpdateMetadata endpoints carry them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

# One request for the channel: (target broker, api key, api version, body).
Send = tuple[int, ApiKey, int, dict]


class ControllerRequests:
    """Builds requests as controller ``controller_id`` at ``epoch`` sees the cluster."""

    def __init__(self, context: ControllerContext, controller_id: int, epoch: int):
        self.context = context
        self.controller_id = controller_id
        self.epoch = epoch

    def _header(self, broker_id: int) -> dict:
        return {"controller_id": self.controller_id, "controller_epoch": self.epoch,
                "broker_epoch": self.context.broker_epochs.get(broker_id, -1)}

    def _partition_state_entry(self, key: TopicPartitionKey, with_offline: bool) -> dict | None:
        found = self.context.states.get(key)
        if found is None:
            return None
        state, version = found
        replicas = list(self.context.replicas_of(key) or ())
        entry = {"partition_index": key[1], "controller_epoch": state.controller_epoch,
                 "leader": state.leader, "leader_epoch": state.leader_epoch,
                 "isr": list(state.isr), "zk_version": version, "replicas": replicas}
        if with_offline:
            entry["offline_replicas"] = [r for r in replicas if r not in self.context.brokers]
        else:
            entry["is_new"] = False
        return entry

    def _grouped(self, keys: list[TopicPartitionKey], with_offline: bool) -> list[dict]:
        topics: dict[str, list[dict]] = {}
        for key in keys:
            entry = self._partition_state_entry(key, with_offline)
            if entry is not None:
                topics.setdefault(key[0], []).append(entry)
        ids = self.context.topic_ids
        return [{"topic_name": t, "topic_id": ids.get(t, ZERO_ID), "partition_states": states}
                for t, states in topics.items()]

    def update_metadata_body(self, broker_id: int, topic_states: list[dict]) -> dict:
        return {
            **self._header(broker_id),
            "topic_states": topic_states,
            "live_brokers": [
                {"id": b.broker_id, "rack": b.rack,
                 "endpoints": [{"port": port, "host": host, "listener": name,
                                "security_protocol": SECURITY_PROTOCOL_IDS.get(
                                    b.security_protocol_of(name), 0)}
                               for name, host, port in b.all_endpoints]}
                for b in sorted(self.context.brokers.values(), key=lambda b: b.broker_id)
            ],
        }

    def update_metadata_to_all(self, keys: list[TopicPartitionKey]) -> list[Send]:
        """UpdateMetadata with the states of ``keys`` to every live broker."""
        return self.update_metadata(keys, self.context.brokers)

    def update_metadata(self, keys: list[TopicPartitionKey], brokers: Iterable[int]
                        ) -> list[Send]:
        """UpdateMetadata with the states of ``keys`` (and the live brokers) to ``brokers``."""
        topic_states = self._grouped(keys, with_offline=True)
        return [(b, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION,
                 self.update_metadata_body(b, topic_states))
                for b in sorted(brokers) if b in self.context.brokers]

    def leader_and_isr(self, keys: list[TopicPartitionKey],
                       only: set[int] | None = None) -> list[Send]:
        """LeaderAndIsr to every live replica of ``keys`` (or only to brokers in ``only``),
        at most LEADER_AND_ISR_PARTITIONS partitions per request.

        Kafka sends one request per broker; its broker applies it on a request thread
        while its network threads go on. Ours applies it on the reactor, at about
        0.1-0.3 ms per partition, so 10,000 in one request would stop that broker (its
        fetches, its answers, and on the controller's own broker the channel to every
        other broker) for seconds; in slices it breathes between them."""
        context = self.context
        per_broker: dict[int, list[TopicPartitionKey]] = {}
        for key in keys:
            for replica in context.replicas_of(key) or ():
                if replica in context.brokers and (only is None or replica in only):
                    per_broker.setdefault(replica, []).append(key)
        sends: list[Send] = []
        for broker_id, its_keys in sorted(per_broker.items()):
            for first in range(0, len(its_keys), LEADER_AND_ISR_PARTITIONS):
                chunk = its_keys[first:first + LEADER_AND_ISR_PARTITIONS]
                leaders = {context.states[k][0].leader for k in chunk if k in context.states}
                sends.append((broker_id, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, {
                    **self._header(broker_id),
                    "type": 0,  # incremental: the partitions named, not all the broker hosts
                    "topic_states": self._grouped(chunk, with_offline=False),
                    "live_leaders": [{"broker_id": b, "host_name": context.brokers[b].host,
                                      "port": context.brokers[b].port}
                                     for b in sorted(leaders) if b in context.brokers],
                }))
        return sends

    def stop_replicas(self, by_broker: dict[int, list[TopicPartitionKey]],
                      delete: bool) -> list[Send]:
        """StopReplica (deleting the logs if ``delete``) to each live broker for its partitions."""
        sends: list[Send] = []
        for broker_id, keys in sorted(by_broker.items()):
            if broker_id not in self.context.brokers or not keys:
                continue
            topics: dict[str, list[int]] = {}
            for topic, index in keys:
                topics.setdefault(topic, []).append(index)
            sends.append((broker_id, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, {
                **self._header(broker_id),
                "delete_partitions": delete,
                "topics": [{"name": t, "partition_indexes": sorted(p)}
                           for t, p in sorted(topics.items())],
            }))
        return sends

    def topic_deletion(self, topic: str, partitions: dict[int, tuple[int, ...]]) -> list[Send]:
        """StopReplica (delete) to the live replicas, then UpdateMetadata marking it gone."""
        live = self.context.live
        replicas_by_broker: dict[int, list[int]] = {}
        for index, replicas in partitions.items():
            for replica in replicas:
                if replica in live:
                    replicas_by_broker.setdefault(replica, []).append(index)
        sends: list[Send] = []
        for broker_id, indexes in sorted(replicas_by_broker.items()):
            sends.append((broker_id, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, {
                **self._header(broker_id),
                "delete_partitions": True,
                "topics": [{"name": topic, "partition_indexes": sorted(indexes)}],
            }))
        gone = [{"partition_index": index, "controller_epoch": self.epoch,
                 "leader": LEADER_DURING_DELETE, "leader_epoch": 0, "isr": [],
                 "zk_version": 0, "replicas": list(replicas), "offline_replicas": []}
                for index, replicas in partitions.items()]
        sends += [(b, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION,
                   self.update_metadata_body(b, [{
                       "topic_name": topic, "partition_states": gone,
                       "topic_id": self.context.topic_ids.get(topic, ZERO_ID)}]))
                  for b in sorted(live)]
        return sends
