"""The message TypedDicts (protocol/message_types.py) are what the generator writes today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from simplekafka.protocol import message_types
from simplekafka.protocol.definitions import MESSAGES

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_message_types",
                                                  ROOT / "tools" / "gen_message_types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checked_in_module_equals_a_fresh_generation():
    generator = _generator()
    assert generator.TARGET.read_text() == generator.generate(), (
        "simplekafka/protocol/message_types.py is stale: run tools/gen_message_types.py")


def test_every_message_has_a_typed_dict_with_its_field_names():
    for pair in MESSAGES.values():
        for message in pair:
            typed = getattr(message_types, message.name)
            expected = {f.name for f in message.fields
                        if f.versions.low <= message.valid.high
                        and f.versions.high >= message.valid.low}
            assert set(typed.__annotations__) - {"tagged_fields"} <= expected
            assert expected <= set(typed.__required_keys__) | set(typed.__optional_keys__)
