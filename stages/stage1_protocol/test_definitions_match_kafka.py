"""Our field names and types are Kafka's, version by version.

kafka-python 3 ships Apache Kafka's own message definitions
(``kafka/protocol/schemas/resources/*.json``). For every message and version
both sides know, the field list we declare must be Kafka's: same names (in
snake_case), same order, same types, same nullability. The byte-level
cross-check in ``test_kafka_python_interop.py`` proves the layouts agree; this
one proves the *names* others code against are Kafka's.
"""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from simplekafka.protocol.definitions import MESSAGES, Versions
from simplekafka.protocol.schema import Array, Schema, StructType

RESOURCES = resources.files("kafka.protocol.schemas") / "resources"


def _load(name: str) -> dict | None:
    path = RESOURCES / f"{name}.json"
    if not path.is_file():
        return None
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    return json.loads(text)


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


_PRIMITIVE = {"int8", "int16", "int32", "int64", "uint32", "bool", "uuid", "string", "bytes",
              "records", "float64"}


def kafka_fields(fields: list[dict], version: int, common: dict[str, list]) -> list[tuple]:
    """(name, type, nullable, children) for the untagged fields present at ``version``."""
    out = []
    for f in fields:
        if "tag" in f or version not in Versions(f["versions"]):
            continue
        nullable = version in Versions(f.get("nullableVersions", "none"))
        type_name = f["type"]
        children = None
        element = type_name[2:] if type_name.startswith("[]") else None
        if element is not None and element not in _PRIMITIVE:
            sub = f.get("fields") or common[element]
            children = kafka_fields(sub, version, common)
            type_name = "[]struct"
        out.append((snake(f["name"]), type_name, nullable, children))
    return out


def our_fields(schema: Schema) -> list[tuple]:
    out = []
    for f in schema.fields:
        t = f.type
        children = None
        if isinstance(t, Array) and isinstance(t.element, StructType):
            type_name = "[]struct"
            children = our_fields(t.element.schema)
        elif isinstance(t, Array):
            type_name = "[]" + t.element.name.replace("compact_", "")
        else:
            type_name = t.name.replace("compact_", "").replace("nullable_", "")
        nullable = bool(getattr(t, "nullable", False))
        out.append((f.name, type_name, nullable, children))
    return out


CASES = []
for pair in MESSAGES.values():
    for message in pair:
        spec = _load(message.name)
        if spec is None:
            continue
        theirs = Versions(spec["validVersions"])
        for version in message.valid:
            if version in theirs:
                CASES.append(pytest.param(message, spec, version, id=f"{message.name}-v{version}"))


@pytest.mark.parametrize(("message", "spec", "version"), CASES)
def test_fields_match_kafkas_definition(message, spec, version):
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    expected = kafka_fields(spec["fields"], version, common)
    assert our_fields(message.schema(version)) == expected
    assert (version in message.flexible) == (version in Versions(spec["flexibleVersions"]))


def test_most_of_our_messages_are_checked():
    checked = {case.values[0].name for case in CASES}
    assert len(checked) >= 30, sorted(checked)
