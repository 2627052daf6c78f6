"""The types of JSON values, for the znodes, the REST API and the console.

A ZooKeeper znode, a REST body or a metrics snapshot is JSON: its shape is
known to the code that reads it, but ``json.loads`` says only "some JSON".
These aliases name that honestly instead of ``Any``, so mypy still checks
what the code does with a value once it has narrowed it (``isinstance``) or
described it (a ``TypedDict``). Read-only ``Mapping``/``Sequence`` forms take
``dict[str, int]`` and the like as arguments, which the invariant ``dict``
forms cannot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonScalar: TypeAlias = str | int | float | bool | None
JsonValue: TypeAlias = JsonScalar | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]
JsonArray: TypeAlias = list[JsonValue]

#: A JSON value as an argument: any mapping or sequence of JSON values.
JsonLike: TypeAlias = JsonScalar | Sequence["JsonLike"] | Mapping[str, "JsonLike"]
JsonMapping: TypeAlias = Mapping[str, JsonLike]
