"""Write simplekafka/protocol/message_types.py: one TypedDict per message, from definitions.py.

Each request and response (and each nested structure) becomes a TypedDict whose
keys are the field names of every version of the message, so that mypy catches a
misspelt key where a handler builds an answer (the encoder catches it at run
time, see ``Schema.check``). A key is required only where Kafka's message would
have no default for it: it exists in every version of its message and the
declaration gives no default. The rest may be left out, and the encoder fills
in the default, as Kafka's generated classes do.

    python tools/gen_message_types.py           # rewrite the module
    python tools/gen_message_types.py --check   # exit 1 if the module is stale

stages/stage1_protocol/test_message_types.py checks that the checked-in module is
what this script writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simplekafka.protocol.definitions import _MISSING, MESSAGES, F, One, Versions  # noqa: E402

TARGET = ROOT / "simplekafka" / "protocol" / "message_types.py"

_SCALAR_TYPES = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint32": "int",
    "bool": "bool", "float64": "float", "uuid": "bytes", "string": "str", "bytes": "bytes",
    "records": "Sized",
}

HEADER = '''# ruff: noqa: E501  (generated: the names are paths, kept whole)
"""Types of every request and response, for mypy: generated, do not edit.

Written by ``tools/gen_message_types.py`` from :mod:`simplekafka.protocol.definitions`
(stages/stage1_protocol/test_message_types.py checks it is up to date). One
TypedDict per message and per nested structure; the keys are the fields of every
version, so one dict can be encoded at any version (fields of other versions
are dropped). Keys that may be left out take their defaults when encoded, as in
Kafka's generated message classes. A request's record sets are bytes (as
decoded); a response's are ``Sized``: bytes, or the broker's file region that
the sender writes itself.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized
from typing import TypedDict

'''


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _span(outer: tuple[int, int], versions: Versions) -> tuple[int, int]:
    return max(outer[0], versions.low), min(outer[1], versions.high)


def _emit(name: str, fields: list[F], span: tuple[int, int], out: list[str],
          request: bool = False) -> None:
    """Append the TypedDict ``name`` for ``fields`` (nested ones first) to ``out``."""
    required: list[str] = []
    optional: list[str] = []
    for f in fields:
        inner = _span(span, f.versions)
        if inner[0] > inner[1]:
            continue  # declared for versions we do not support
        nullable = max(inner[0], f.nullable.low) <= min(inner[1], f.nullable.high)
        if isinstance(f.type, One):  # one nested structure, not an array of them
            nested = name + _camel(f.name)
            _emit(nested, f.type.fields, inner, out, request)
            text = nested
        elif isinstance(f.type, list):
            nested = name + _camel(f.name)
            _emit(nested, f.type, inner, out, request)
            text = f"Sequence[{nested}]"
        elif f.type.startswith("[]"):
            text = f"Sequence[{_SCALAR_TYPES[f.type[2:]]}]"
        elif f.type == "records" and request:
            text = "bytes"  # decoded from the wire; only an answer holds a file region
        else:
            text = _SCALAR_TYPES[f.type]
        if nullable:
            text += " | None"
        line = f"    {f.name}: {text}"
        (required if inner == span and f.default is _MISSING else optional).append(line)
    optional.append("    tagged_fields: dict[int, bytes]")
    if required:
        out.append(f"class _{name}Required(TypedDict):")
        out.extend(required)
        out.append("\n")
        out.append(f"class {name}(_{name}Required, total=False):")
    else:
        out.append(f"class {name}(TypedDict, total=False):")
    out.extend(optional)
    out.append("\n")


def generate() -> str:
    """The text of message_types.py."""
    out: list[str] = []
    names: list[str] = []
    for _, pair in sorted(MESSAGES.items()):
        for message in pair:
            _emit(message.name, message.fields, (message.valid.low, message.valid.high), out,
                  message.name.endswith("Request"))
            names.append(message.name)
    body = "\n".join(out).replace("\n\n\n", "\n\n\n")
    exports = "".join(f'    "{n}",\n' for n in sorted(names))
    return HEADER + "\n" + body.rstrip("\n") + "\n\n\n__all__ = [\n" + exports + "]\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the module is stale")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run tools/gen_message_types.py")
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
