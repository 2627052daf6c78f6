"""The OpenAPI 3 document of the console's REST API, written out by hand.

Hand-written rather than generated: the document is the contract that
schemathesis tests the server against, so it must not be derived from the
server's own code (a generated document would agree with every bug).
"""

from __future__ import annotations

from simplekafka.console.service import (
    DEFAULT_RECORDS_LIMIT,
    MAX_PARTITIONS,
    MAX_RECORDS_LIMIT,
    MAX_RECORDS_PER_POST,
)
from simplekafka.json_values import JsonArray, JsonObject, JsonValue

TOPIC_PATTERN = r"^[a-zA-Z0-9._-]{1,249}$"


def _ref(name: str) -> JsonObject:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: JsonObject, description: str) -> JsonObject:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> JsonObject:
    return _json(_ref("Error"), description)


def _int(minimum: int | None = None, maximum: int | None = None, **extra: JsonValue) -> JsonObject:
    schema: JsonObject = {"type": "integer", **extra}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def _object(properties: JsonObject, required: JsonArray | None = None,
            closed: bool = False) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema


NULLABLE_STRING: JsonObject = {"type": "string", "nullable": True}
NULLABLE_INT: JsonObject = {"type": "integer", "nullable": True}
ENCODING: JsonObject = {"type": "string", "enum": ["base64", None], "nullable": True,
            "description": "base64 when the bytes are not UTF-8 text"}

# What ZooKeeper refuses in a znode path (names are stored there): controls, surrogates
# (so characters beyond U+FFFF), private use, U+FFF0 and above.
REFUSED = "\\x00-\\x1f\\x7f-\\x9f\\ud800-\\uf8ff\\ufff0-\\uffff"
NO_CONTROLS = f"^[^{REFUSED}]+$"
ACL_OPERATIONS: JsonArray = ["ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
                  "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"]
ACL_RESOURCE_TYPES: JsonArray = ["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"]
ACL_FIELDS: JsonArray = ["principal", "host", "operation", "permission_type", "resource_type",
              "resource_name", "pattern_type"]
SCRAM_MECHANISMS: JsonArray = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
ACL_FILTER_PROPERTIES: JsonObject = {
    "principal": {"type": "string"}, "host": {"type": "string"},
    "operation": {"type": "string", "enum": ["ANY", *ACL_OPERATIONS]},
    "permission_type": {"type": "string", "enum": ["ANY", "ALLOW", "DENY"]},
    "resource_type": {"type": "string",
                      "enum": ["ANY", *ACL_RESOURCE_TYPES, "DELEGATION_TOKEN", "USER"]},
    "resource_name": {"type": "string"},
    "pattern_type": {"type": "string", "enum": ["ANY", "MATCH", "LITERAL", "PREFIXED"],
                     "description": "MATCH: every pattern that applies to resource_name"},
}

SCHEMAS: JsonObject = {
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
        "log_start_offset": {**NULLABLE_INT, "description": "the same as earliest_offset"},
        "log_end_offset": {**NULLABLE_INT, "description": "the same as latest_offset"},
        "size_bytes": {**NULLABLE_INT, "minimum": 0, "description": (
            "bytes of the leader replica's log, from the leader's DescribeLogDirs "
            "answer; null when the leader did not answer or the partition has no "
            "leader")},
    }, ["earliest_offset", "latest_offset", "log_start_offset", "log_end_offset",
        "size_bytes"])]},
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
        "partition": _int(0), "offset": _int(0), "timestamp": _int(), "key": NULLABLE_STRING,
        "value": NULLABLE_STRING,
        "headers": {"type": "array", "items": _ref("Header")},
        "encoding": {**ENCODING, "description": "base64: key and value are base64"},
        "value_json": {"nullable": True, "description": (
            "the value parsed, when it is a JSON object or array (to pretty-print); "
            "else null")},
    }, ["partition", "offset", "timestamp", "key", "value", "headers", "encoding",
        "value_json"]),
    "Records": _object({
        "topic": {"type": "string"},
        "partition": _int(0, nullable=True, description="null: every partition"),
        "earliest_offset": {**NULLABLE_INT, "description": "one partition only, else null"},
        "latest_offset": NULLABLE_INT,
        "next_offset": _int(0, nullable=True,
                            description="one partition: where the next page starts"),
        "records": {"type": "array", "items": _ref("Record"), "description": (
            "one partition: in offset order; every partition (or a filter): merged by "
            "timestamp, the first `limit`")},
        "partitions": {"type": "array", "items": _object({
            "partition": _int(0), "earliest_offset": _int(0), "latest_offset": _int(0),
            "next_offset": _int(0, description="where reading this partition stopped"),
        }, ["partition", "earliest_offset", "latest_offset", "next_offset"])},
        "complete": {"type": "boolean", "description": (
            "false when the scan stopped early (time, or the per-partition scan limit) "
            "so later matches may exist")},
    }, ["topic", "partition", "earliest_offset", "latest_offset", "next_offset", "records",
        "partitions", "complete"]),
    "NewRecord": _object({
        "key": NULLABLE_STRING, "value": NULLABLE_STRING,
        "headers": {"type": "array", "nullable": True, "items": _object(
            {"key": {"type": "string"}, "value": NULLABLE_STRING}, ["key"], closed=True),
            "description": "values in the record's encoding; null or absent: none"},
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
        "topic": {"type": "string", "pattern": TOPIC_PATTERN,
                  "description": "default: every topic the group has committed offsets for"},
        "to": {"oneOf": [
            {"type": "string", "enum": ["earliest", "latest", "current"]},
            _int(0, description="an offset (moved inside the log if outside it)"),
            _object({"datetime": {"type": "string", "description": (
                "ISO 8601, e.g. 2024-05-01T12:00:00Z (local time without a zone): the "
                "first record at or after it, else the log end")}}, ["datetime"], closed=True),
            _object({"shift_by": _int(-2**62, 2**62, description=(
                "from the committed offset; may be negative"))}, ["shift_by"], closed=True),
            _object({"duration": {"type": "string", "description": (
                "ISO 8601 duration back from now, e.g. PT1H")}}, ["duration"], closed=True),
        ]},
        "partitions": {"type": "array", "items": _int(0, MAX_PARTITIONS), "minItems": 1,
                       "description": "with topic: only these (default: all of the topic)"},
        "execute": {"type": "boolean", "default": False, "description": (
            "false (default): only the plan, nothing changes (kafka-consumer-groups.sh "
            "without --execute); true: commit it")},
    }, ["to"], closed=True),
    "OffsetResetResult": _object({
        "group_id": {"type": "string"},
        "executed": {"type": "boolean", "description": "whether the plan was committed"},
        "plan": {"type": "array", "items": _object({
            "topic": {"type": "string"}, "partition": _int(0),
            "current": {**NULLABLE_INT, "description": "the committed offset (null: none)"},
            "new": _int(0),
        }, ["topic", "partition", "current", "new"])},
    }, ["group_id", "executed", "plan"]),
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
    "BrokerStatus": _object({
        "id": _int(), "host": {"type": "string"}, "port": _int(0, 65535),
        "rack": NULLABLE_STRING, "controller": {"type": "boolean"},
        "registered": {"type": "boolean",
                       "description": "in Metadata now (false: seen before, gone since)"},
        "reachable": {"type": "boolean", "description": (
            "registered and answered an ApiVersions probe just now (under a second), so a "
            "stopped broker is false at the next poll, before ZooKeeper's session expires")},
    }, ["id", "host", "port", "rack", "controller", "registered", "reachable"]),
    "ConfigEntry": _object({
        "name": {"type": "string"}, "value": {**NULLABLE_STRING,
                                              "description": "null when sensitive or unset"},
        "source": {"type": "string", "enum": [
            "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
            "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "UNKNOWN"]},
        "read_only": {"type": "boolean"}, "sensitive": {"type": "boolean"},
        "is_default": {"type": "boolean", "description": "not set dynamically"},
    }, ["name", "value", "source", "read_only", "sensitive", "is_default"]),
    "Configs": _object({"configs": {"type": "array", "items": _ref("ConfigEntry")}},
                       ["configs"]),
    "ConfigChanges": _object({
        "set": {"type": "object", "description": "name: new value",
                "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "number"},
                                                   {"type": "boolean"}]}},
        "delete": {"type": "array", "items": {"type": "string", "minLength": 1},
                   "description": "names to return to their default"},
    }, closed=True),
    "AclBinding": _object({
        "principal": {"type": "string"}, "host": {"type": "string"},
        "operation": {"type": "string", "enum": ACL_OPERATIONS},
        "permission_type": {"type": "string", "enum": ["ALLOW", "DENY"]},
        "resource_type": {"type": "string", "enum": ACL_RESOURCE_TYPES},
        "resource_name": {"type": "string"},
        "pattern_type": {"type": "string", "enum": ["LITERAL", "PREFIXED"]},
    }, ACL_FIELDS),
    "NewAcl": _object({
        "principal": {"type": "string", "minLength": 1,
                      "pattern": f"^[^{REFUSED}]*:[^{REFUSED}]*$",
                      "description": "TYPE:NAME, e.g. User:alice"},
        "host": {"type": "string", "minLength": 1, "pattern": NO_CONTROLS, "default": "*"},
        "operation": {"type": "string", "enum": ACL_OPERATIONS},
        "permission_type": {"type": "string", "enum": ["ALLOW", "DENY"], "default": "ALLOW"},
        "resource_type": {"type": "string", "enum": ACL_RESOURCE_TYPES},
        "resource_name": {"type": "string", "minLength": 1, "pattern": NO_CONTROLS},
        "pattern_type": {"type": "string", "enum": ["LITERAL", "PREFIXED"],
                         "default": "LITERAL"},
    }, ["principal", "operation", "resource_type", "resource_name"], closed=True),
    "AclFilter": _object(ACL_FILTER_PROPERTIES, closed=True),
    "User": _object({"name": {"type": "string"}, "mechanisms": {"type": "array", "items": _object(
        {"mechanism": {"type": "string"}, "iterations": _int(0)},
        ["mechanism", "iterations"])}}, ["name", "mechanisms"]),
    "UserCredential": _object({
        "mechanism": {"type": "string", "enum": SCRAM_MECHANISMS},
        "password": {"type": "string", "minLength": 1,
                     "description": "salted and hashed by the console; never sent as is"},
        "iterations": _int(4096, 16384, default=4096),
    }, ["mechanism", "password"], closed=True),
    "Throughput": _object({
        "interval_ms": _int(1, description="how often the console scrapes the brokers"),
        "topics": {"type": "object", "additionalProperties": {"type": "array", "items": _object({
            "t_ms": _int(0), "messages_in_per_s": {"type": "number", "minimum": 0},
            "messages_out_per_s": {"type": "number", "minimum": 0, "nullable": True,
                                   "description": (
                "an estimate: brokers count bytes out, not records out (as Kafka's "
                "BrokerTopicMetrics), so this is bytes out per second over the topic's mean "
                "record size in; null when the brokers have counted no records in")},
            "bytes_in_per_s": {"type": "number", "minimum": 0},
            "bytes_out_per_s": {"type": "number", "minimum": 0},
        }, ["t_ms", "messages_in_per_s", "messages_out_per_s", "bytes_in_per_s",
            "bytes_out_per_s"])}, "description": "per topic, the last ~5 minutes, oldest first"},
    }, ["interval_ms", "topics"]),
    "Overview": _object({
        "cluster_id": NULLABLE_STRING, "controller_id": _int(),
        "brokers": {"type": "array", "items": _ref("BrokerStatus")},
        "topics": {"type": "array", "items": _object({
            "name": {"type": "string"}, "internal": {"type": "boolean"},
            "partitions": {"type": "array", "items": _ref("PartitionState")},
        }, ["name", "internal", "partitions"])},
    }, ["cluster_id", "controller_id", "brokers", "topics"]),
}

TOPIC_NAME_PARAM: JsonObject = {"name": "name", "in": "path", "required": True,
                    "schema": {"type": "string"}, "description": "topic name"}
GROUP_ID_PARAM: JsonObject = {"name": "group_id", "in": "path", "required": True,
                  "schema": {"type": "string"}}
BROKER_ID_PARAM: JsonObject = {"name": "broker_id", "in": "path", "required": True,
                   "schema": {"type": "string", "pattern": "^([0-9]{1,9}|default)$"},
                   "description": "a broker id, or default (the cluster-wide dynamic default)"}
USER_PARAM: JsonObject = {"name": "user", "in": "path", "required": True,
              "schema": {"type": "string", "minLength": 1, "not": {"enum": [".", ".."]},
                         "description": "any name but . and .. (brokers keep it "
                                        "URL-encoded in its znode, as Kafka does)"}}
UNREACHABLE = _error("the cluster did not answer in time")
BAD_INPUT = _error("bad input (the message says what)")


def _body(schema_name: str) -> JsonObject:
    return {"required": True,
            "content": {"application/json": {"schema": _ref(schema_name)}}}


PATHS: JsonObject = {
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
                "description": (
                    "With `partition=N` and no filter: that partition's records in offset "
                    "order from `offset`. Otherwise (`partition` absent or `all`, or any of "
                    "since_ms, until_ms, contains): every partition read from the first "
                    "record at or after since_ms (ListOffsets by time), records filtered, "
                    "merged by timestamp, the first `limit` of them; each partition is read "
                    "at most to its end when asked and at most 10,000 records deep."),
                "parameters": [
                    {"name": "partition", "in": "query", "schema": {"oneOf": [
                        {"type": "string", "enum": ["all"]}, _int(0, MAX_PARTITIONS)]},
                     "description": "a partition, or all (the default)"},
                    {"name": "offset", "in": "query", "schema": _int(0, description=(
                        "with one partition and no filter: where to start (default: "
                        "the earliest offset)"))},
                    {"name": "limit", "in": "query",
                     "schema": _int(1, MAX_RECORDS_LIMIT, default=DEFAULT_RECORDS_LIMIT)},
                    {"name": "since_ms", "in": "query", "schema": _int(0, description=(
                        "record timestamps at or after this (ms since the epoch)"))},
                    {"name": "until_ms", "in": "query",
                     "schema": _int(0, description="record timestamps before this")},
                    {"name": "contains", "in": "query", "schema": {
                        "type": "string", "minLength": 1, "maxLength": 1000,
                        "description": "text the key or the value contains (case-sensitive)"}},
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
        "post": {"summary": "Plan (and with execute, commit) new offsets for an empty group",
                 "operationId": "resetOffsets", "requestBody": _body("OffsetReset"),
                 "responses": {"200": _json(_ref("OffsetResetResult"),
                                            "the plan, and whether it was committed"),
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
    "/api/topics/{name}/configs": {
        "parameters": [TOPIC_NAME_PARAM],
        "get": {"summary": "A topic's configs (DescribeConfigs)", "operationId": "getTopicConfigs",
                "responses": {"200": _json(_ref("Configs"), "the configs"),
                              "404": _error("unknown topic"), "503": UNREACHABLE}},
        "patch": {"summary": "Set and delete topic configs (IncrementalAlterConfigs)",
                  "description": "All or nothing: a bad name or value is a 400 with Kafka's "
                                 "message and changes nothing.",
                  "operationId": "alterTopicConfigs", "requestBody": _body("ConfigChanges"),
                  "responses": {"200": _json(_ref("Configs"), "the configs after the change"),
                                "400": BAD_INPUT, "404": _error("unknown topic"),
                                "503": UNREACHABLE}},
    },
    "/api/brokers": {"get": {
        "summary": "Every broker ever seen, with controller and reachable",
        "operationId": "listBrokers",
        "responses": {"200": _json({"type": "array", "items": _ref("BrokerStatus")},
                                   "the brokers"), "503": UNREACHABLE}}},
    "/api/brokers/{broker_id}/configs": {
        "parameters": [BROKER_ID_PARAM],
        "get": {"summary": "A broker's configs, or the cluster-wide dynamic default's",
                "operationId": "getBrokerConfigs",
                "responses": {"200": _json(_ref("Configs"), "the configs"),
                              "404": _error("unknown broker"), "503": UNREACHABLE}},
        "patch": {"summary": "Set and delete dynamic broker configs (IncrementalAlterConfigs)",
                  "operationId": "alterBrokerConfigs", "requestBody": _body("ConfigChanges"),
                  "responses": {"200": _json(_ref("Configs"),
                                             "the configs once the broker describes the change "
                                             "(a broker takes it from ZooKeeper's notification; "
                                             "waited for up to 10 s)"),
                                "400": BAD_INPUT, "404": _error("unknown broker"),
                                "503": UNREACHABLE}},
    },
    "/api/acls": {
        "get": {"summary": "The ACLs a filter selects (DescribeAcls)", "operationId": "listAcls",
                "parameters": [{"name": k, "in": "query", "schema": v}
                               for k, v in ACL_FILTER_PROPERTIES.items()],
                "responses": {"200": _json({"type": "array", "items": _ref("AclBinding")},
                                           "the ACLs"),
                              "400": _error("bad filter, or the brokers run without an "
                                            "authorizer (SECURITY_DISABLED)"),
                              "503": UNREACHABLE}},
        "post": {"summary": "Create one ACL (CreateAcls)", "operationId": "createAcl",
                 "requestBody": _body("NewAcl"),
                 "responses": {"201": _json(_object({"created": {
                     "type": "array", "items": _ref("AclBinding")}}, ["created"]), "created"),
                     "400": _error("bad binding, or the brokers run without an authorizer "
                                   "(SECURITY_DISABLED)"), "503": UNREACHABLE}},
        "delete": {"summary": "Delete the ACLs a filter selects (DeleteAcls)",
                   "description": "The body is required; {} selects every ACL.",
                   "operationId": "deleteAcls", "requestBody": _body("AclFilter"),
                   "responses": {"200": _json(_object({"deleted": {
                       "type": "array", "items": _ref("AclBinding")}}, ["deleted"]),
                       "what was deleted"),
                       "400": _error("bad filter, or the brokers run without an authorizer "
                                     "(SECURITY_DISABLED)"), "503": UNREACHABLE}},
    },
    "/api/users": {"get": {
        "summary": "SCRAM users (DescribeUserScramCredentials): mechanisms, never keys",
        "operationId": "listUsers",
        "responses": {"200": _json({"type": "array", "items": _ref("User")}, "the users"),
                      "503": UNREACHABLE}}},
    "/api/users/{user}": {
        "parameters": [USER_PARAM],
        "put": {"summary": "Add or replace a user's SCRAM credential (AlterUserScramCredentials)",
                "operationId": "putUser", "requestBody": _body("UserCredential"),
                "responses": {"200": _json(_object({
                    "name": {"type": "string"}, "mechanism": {"type": "string"},
                    "iterations": _int(4096, 16384)}, ["name", "mechanism", "iterations"]),
                    "stored"), "400": BAD_INPUT, "503": UNREACHABLE}},
        "delete": {"summary": "Delete a user's credential for one mechanism",
                   "operationId": "deleteUser",
                   "parameters": [{"name": "mechanism", "in": "query", "required": True,
                                   "schema": {"type": "string", "enum": SCRAM_MECHANISMS}}],
                   "responses": {"204": {"description": "deleted"}, "400": BAD_INPUT,
                                 "404": _error("no such credential"), "503": UNREACHABLE}},
    },
    "/api/metrics/throughput": {"get": {
        "summary": "Messages and bytes in/out per second per topic, the last ~5 minutes",
        "description": "Sampled in the background every few seconds from each broker's own "
                       "metrics (kafka_server_brokertopicmetrics_*_total on the "
                       "metrics.listener its broker config names), summed over brokers.",
        "operationId": "getThroughput",
        "responses": {"200": _json(_ref("Throughput"), "the series")}}},
    "/api/openapi.json": {"get": {
        "summary": "This document", "operationId": "getOpenApi",
        "responses": {"200": _json({"type": "object"}, "the OpenAPI document")}}},
}


TAGS = [("cluster", "the cluster, its overview, leader election, this document"),
        ("topics", "create, describe, delete topics; their configs"),
        ("records", "read and produce records"),
        ("groups", "consumer groups, their offsets and lag, offset resets"),
        ("brokers", "brokers, whether they answer, their configs"),
        ("acls", "ACLs (the brokers need an authorizer)"),
        ("users", "SCRAM users"),
        ("metrics", "figures sampled from the brokers' metrics")]


def _tag(path: str) -> str:
    parts = path.split("/")
    if path.endswith("/records"):
        return "records"
    return {"topics": "topics", "groups": "groups", "brokers": "brokers", "acls": "acls",
            "users": "users", "metrics": "metrics"}.get(parts[2], "cluster")


def document() -> JsonObject:
    """The whole OpenAPI 3.0 document (a fresh copy), each operation tagged by resource."""
    import copy

    paths = copy.deepcopy(PATHS)
    for path, item in paths.items():
        if not isinstance(item, dict):
            continue
        for method, operation in item.items():
            if method != "parameters" and isinstance(operation, dict):
                operation["tags"] = [_tag(path)]
    return copy.deepcopy({
        "openapi": "3.0.3",
        "info": {
            "title": "SimpleKafka console",
            "version": "1",
            "description": "Administer a Kafka-compatible cluster over HTTP, through the "
                           "Kafka protocol only: topics and their configs, records, "
                           "consumer groups and offset resets, brokers and their configs, "
                           "ACLs, SCRAM users, leader election, throughput. Errors are "
                           '{"error": "..."} with 400 (bad input, Kafka\'s message when the '
                           "cluster refused it), 404 (unknown topic, group, broker or "
                           "user), 409 (exists, or a group has members) or 503 (the "
                           "cluster did not answer).",
        },
        "tags": [{"name": name, "description": text} for name, text in TAGS],
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    })
