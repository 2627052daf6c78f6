"""The OpenAPI 3 document of the console's REST API, written out by hand.

Hand-written rather than generated: the document is the contract that
schemathesis tests the server against, so it must not be derived from the
server's own code (a generated document would agree with every bug).
"""

from __future__ import annotations

from typing import Any

from simplekafka.console.service import (
    DEFAULT_RECORDS_LIMIT,
    MAX_PARTITIONS,
    MAX_RECORDS_LIMIT,
    MAX_RECORDS_PER_POST,
)

TOPIC_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


def _int(minimum: int | None = None, maximum: int | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", **extra}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _object(properties: dict[str, Any], required: list[str] | None = None,
            closed: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema


NULLABLE_STRING = {"type": "string", "nullable": True}
NULLABLE_INT = {"type": "integer", "nullable": True}
ENCODING = {"type": "string", "enum": ["base64", None], "nullable": True,
            "description": "base64 when the bytes are not UTF-8 text"}

SCHEMAS: dict[str, Any] = {
    "Error": _object({"error": {"type": "string"}}, ["error"]),
    "Broker": _object({"id": _int(), "host": {"type": "string"}, "port": _int(0, 65535),
                       "rack": NULLABLE_STRING}, ["id", "host", "port", "rack"]),
    "Cluster": _object({
        "cluster_id": NULLABLE_STRING,
        "controller_id": _int(description="-1 while there is no controller"),
        "brokers": {"type": "array", "items": _ref("Broker")},
    }, ["cluster_id", "controller_id", "brokers"]),
    "PartitionState": _object({
        "partition": _int(0), "leader": _int(-1, description="-1: no leader (offline)"),
        "replicas": {"type": "array", "items": _int()},
        "isr": {"type": "array", "items": _int()},
        "under_replicated": {"type": "boolean"},
    }, ["partition", "leader", "replicas", "isr", "under_replicated"]),
    "Partition": {"allOf": [_ref("PartitionState"), _object({
        "earliest_offset": {**NULLABLE_INT, "description": "null while the partition is offline"},
        "latest_offset": NULLABLE_INT,
    }, ["earliest_offset", "latest_offset"])]},
    "TopicSummary": _object({
        "name": {"type": "string"}, "internal": {"type": "boolean"},
        "partitions": _int(0), "replication_factor": _int(0),
        "under_replicated_partitions": _int(0),
    }, ["name", "internal", "partitions", "replication_factor", "under_replicated_partitions"]),
    "Topic": _object({
        "name": {"type": "string"}, "internal": {"type": "boolean"},
        "partitions": {"type": "array", "items": _ref("Partition")},
    }, ["name", "internal", "partitions"]),
    "NewTopic": _object({
        "name": {"type": "string", "pattern": TOPIC_PATTERN},
        "partitions": _int(1, MAX_PARTITIONS, default=1),
        "replication_factor": _int(1, 32, default=1),
        "configs": {"type": "object", "description": "Kafka topic configs, e.g. retention.ms",
                    "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "number"},
                                                       {"type": "boolean"}]}},
    }, ["name"], closed=True),
    "Header": _object({"key": {"type": "string"}, "value": NULLABLE_STRING,
                       "encoding": ENCODING}, ["key", "value", "encoding"]),
    "Record": _object({
        "offset": _int(0), "timestamp": _int(), "key": NULLABLE_STRING,
        "value": NULLABLE_STRING,
        "headers": {"type": "array", "items": _ref("Header")},
        "encoding": {**ENCODING, "description": "base64: key and value are base64"},
    }, ["offset", "timestamp", "key", "value", "headers", "encoding"]),
    "Records": _object({
        "topic": {"type": "string"}, "partition": _int(0),
        "earliest_offset": _int(0), "latest_offset": _int(0),
        "next_offset": _int(0, description="where the next page starts"),
        "records": {"type": "array", "items": _ref("Record")},
    }, ["topic", "partition", "earliest_offset", "latest_offset", "next_offset", "records"]),
    "NewRecord": _object({
        "key": NULLABLE_STRING, "value": NULLABLE_STRING,
        "partition": _int(0, MAX_PARTITIONS, nullable=True,
                          description="default (or null): the key's partition"),
        "encoding": {**ENCODING,
                     "description": "base64: key and value are base64 (default: UTF-8 text)"},
    }, closed=True),
    "NewRecords": _object({"records": {"type": "array", "items": _ref("NewRecord"),
                                       "minItems": 1, "maxItems": MAX_RECORDS_PER_POST}},
                          ["records"], closed=True),
    "ProduceResult": _object({"offsets": {"type": "array", "items": _object(
        {"partition": _int(0), "offset": _int(-1)}, ["partition", "offset"])}}, ["offsets"]),
    "GroupSummary": _object({"group_id": {"type": "string"},
                             "protocol_type": {"type": "string"}},
                            ["group_id", "protocol_type"]),
    "Group": _object({
        "group_id": {"type": "string"}, "state": {"type": "string"},
        "protocol_type": {"type": "string"}, "protocol": {"type": "string"},
        "coordinator": _int(),
        "members": {"type": "array", "items": _object({
            "member_id": {"type": "string"}, "client_id": {"type": "string"},
            "client_host": {"type": "string"},
            "partitions": {"type": "array", "items": _object(
                {"topic": {"type": "string"}, "partition": _int(0)}, ["topic", "partition"])},
        }, ["member_id", "client_id", "client_host", "partitions"])},
        "partitions": {"type": "array", "items": _object({
            "topic": {"type": "string"}, "partition": _int(0),
            "committed": {**NULLABLE_INT, "description": "null: nothing committed"},
            "latest": _int(-1), "lag": NULLABLE_INT,
        }, ["topic", "partition", "committed", "latest", "lag"])},
        "total_lag": _int(0),
    }, ["group_id", "state", "protocol_type", "protocol", "coordinator", "members",
        "partitions", "total_lag"]),
    "OffsetReset": _object({
        "topic": {"type": "string", "pattern": TOPIC_PATTERN},
        "to": {"oneOf": [{"type": "string", "enum": ["earliest", "latest"]}, _int(0)]},
        "partitions": {"type": "array", "items": _int(0, MAX_PARTITIONS), "minItems": 1,
                       "description": "default: every partition of the topic"},
    }, ["topic", "to"], closed=True),
    "OffsetResetResult": _object({
        "group_id": {"type": "string"}, "topic": {"type": "string"},
        "offsets": {"type": "array", "items": _object(
            {"partition": _int(0), "offset": _int(0)}, ["partition", "offset"])},
    }, ["group_id", "topic", "offsets"]),
    "LeaderElection": _object({
        "topic": {"type": "string", "pattern": TOPIC_PATTERN,
                  "description": "default: every topic"},
        "partitions": {"type": "array", "items": _int(0, MAX_PARTITIONS), "minItems": 1,
                       "description": "with topic: only these partitions"},
    }, closed=True),
    "LeaderElectionResult": _object({"partitions": {"type": "array", "items": _object({
        "topic": {"type": "string"}, "partition": _int(0),
        "result": {"type": "string", "enum": ["elected", "already_preferred", "not_possible"]},
        "leader": _int(-1),
    }, ["topic", "partition", "result", "leader"])}}, ["partitions"]),
    "Overview": _object({
        "cluster_id": NULLABLE_STRING, "controller_id": _int(),
        "brokers": {"type": "array", "items": _ref("Broker")},
        "topics": {"type": "array", "items": _object({
            "name": {"type": "string"}, "internal": {"type": "boolean"},
            "partitions": {"type": "array", "items": _ref("PartitionState")},
        }, ["name", "internal", "partitions"])},
    }, ["cluster_id", "controller_id", "brokers", "topics"]),
}

TOPIC_NAME_PARAM = {"name": "name", "in": "path", "required": True,
                    "schema": {"type": "string"}, "description": "topic name"}
GROUP_ID_PARAM = {"name": "group_id", "in": "path", "required": True,
                  "schema": {"type": "string"}}
UNREACHABLE = _error("the cluster did not answer in time")
BAD_INPUT = _error("bad input (the message says what)")


def _body(schema_name: str) -> dict[str, Any]:
    return {"required": True,
            "content": {"application/json": {"schema": _ref(schema_name)}}}


PATHS: dict[str, Any] = {
    "/api/cluster": {"get": {
        "summary": "Cluster id, controller and brokers", "operationId": "getCluster",
        "responses": {"200": _json(_ref("Cluster"), "the cluster"), "503": UNREACHABLE}}},
    "/api/overview": {"get": {
        "summary": "Brokers and every topic's partitions (what the web console polls)",
        "operationId": "getOverview",
        "responses": {"200": _json(_ref("Overview"), "the overview"), "503": UNREACHABLE}}},
    "/api/topics": {
        "get": {"summary": "Every topic", "operationId": "listTopics",
                "responses": {"200": _json({"type": "array", "items": _ref("TopicSummary")},
                                           "the topics"), "503": UNREACHABLE}},
        "post": {"summary": "Create a topic", "operationId": "createTopic",
                 "requestBody": _body("NewTopic"),
                 "responses": {"201": _json(_ref("Topic"), "created"), "400": BAD_INPUT,
                               "409": _error("the topic exists"), "503": UNREACHABLE}},
    },
    "/api/topics/{name}": {
        "parameters": [TOPIC_NAME_PARAM],
        "get": {"summary": "A topic's partitions with leader, ISR and offsets",
                "operationId": "getTopic",
                "responses": {"200": _json(_ref("Topic"), "the topic"),
                              "404": _error("unknown topic"), "503": UNREACHABLE}},
        "delete": {"summary": "Delete a topic", "operationId": "deleteTopic",
                   "responses": {"204": {"description": "deleted"},
                                 "404": _error("unknown topic"), "503": UNREACHABLE}},
    },
    "/api/topics/{name}/records": {
        "parameters": [TOPIC_NAME_PARAM],
        "get": {"summary": "Read records of one partition", "operationId": "getRecords",
                "parameters": [
                    {"name": "partition", "in": "query", "schema": _int(0, default=0)},
                    {"name": "offset", "in": "query",
                     "schema": _int(0, description="default: the earliest offset")},
                    {"name": "limit", "in": "query",
                     "schema": _int(1, MAX_RECORDS_LIMIT, default=DEFAULT_RECORDS_LIMIT)},
                ],
                "responses": {"200": _json(_ref("Records"), "the records"), "400": BAD_INPUT,
                              "404": _error("unknown topic or partition"),
                              "503": UNREACHABLE}},
        "post": {"summary": "Produce records (acks=all)", "operationId": "produceRecords",
                 "requestBody": _body("NewRecords"),
                 "responses": {"200": _json(_ref("ProduceResult"), "where they landed"),
                               "400": BAD_INPUT,
                               "404": _error("unknown topic or partition"),
                               "503": UNREACHABLE}},
    },
    "/api/groups": {"get": {
        "summary": "Every consumer group", "operationId": "listGroups",
        "responses": {"200": _json({"type": "array", "items": _ref("GroupSummary")},
                                   "the groups"), "503": UNREACHABLE}}},
    "/api/groups/{group_id}": {
        "parameters": [GROUP_ID_PARAM],
        "get": {"summary": "A group's state, members, offsets and lag", "operationId": "getGroup",
                "responses": {"200": _json(_ref("Group"), "the group"),
                              "404": _error("unknown group"), "503": UNREACHABLE}},
        "delete": {"summary": "Delete an empty group and its offsets",
                   "operationId": "deleteGroup",
                   "responses": {"204": {"description": "deleted"},
                                 "404": _error("unknown group"),
                                 "409": _error("the group has members"),
                                 "503": UNREACHABLE}},
    },
    "/api/groups/{group_id}/offsets/reset": {
        "parameters": [GROUP_ID_PARAM],
        "post": {"summary": "Reset an empty group's offsets of a topic",
                 "operationId": "resetOffsets", "requestBody": _body("OffsetReset"),
                 "responses": {"200": _json(_ref("OffsetResetResult"), "what was committed"),
                               "400": BAD_INPUT,
                               "404": _error("unknown group, topic or partition"),
                               "409": _error("the group has members"),
                               "503": UNREACHABLE}}},
    "/api/leader-election": {"post": {
        "summary": "Elect the preferred replicas as leaders", "operationId": "electLeaders",
        "requestBody": {"required": False,
                        "content": {"application/json": {"schema": _ref("LeaderElection")}}},
        "responses": {"200": _json(_ref("LeaderElectionResult"), "per partition"),
                      "400": BAD_INPUT, "404": _error("unknown topic or partition"),
                      "503": UNREACHABLE}}},
    "/api/openapi.json": {"get": {
        "summary": "This document", "operationId": "getOpenApi",
        "responses": {"200": _json({"type": "object"}, "the OpenAPI document")}}},
}


def document() -> dict[str, Any]:
    """The whole OpenAPI 3.0 document (a fresh copy)."""
    import copy

    return copy.deepcopy({
        "openapi": "3.0.3",
        "info": {
            "title": "SimpleKafka console",
            "version": "1",
            "description": "Administer a Kafka-compatible cluster over HTTP: topics, "
                           "records, consumer groups, leader election. Errors are "
                           '{"error": "..."} with 400 (bad input), 404 (unknown topic or '
                           "group), 409 (exists, or a group has members) or 503 (the "
                           "cluster did not answer).",
        },
        "paths": PATHS,
        "components": {"schemas": SCHEMAS},
    })
