"""Hypothesis strategies generated from the schemas themselves.

A test that lists field values by hand tests only the fields someone thought
of. Walking the schema instead means every field of every version is
exercised, including the ones added later.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from simplekafka.protocol.schema import (
    Array,
    Bytes,
    FieldType,
    Fixed,
    Schema,
    String,
    StructType,
    Uuid,
)

_text = st.text(max_size=12)


def for_type(field_type: FieldType, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that ``field_type`` can encode."""
    if isinstance(field_type, Fixed):
        if field_type.fmt == "d":  # float64: NaN never equals itself, so no round trip
            return st.floats(allow_nan=False)
        if field_type.fmt == "?":
            return st.booleans()
        return st.integers(field_type.lo, field_type.hi)
    if isinstance(field_type, Uuid):
        return st.binary(min_size=16, max_size=16)
    if isinstance(field_type, String):
        base = _text
        return st.none() | base if field_type.nullable else base
    if isinstance(field_type, Bytes):
        base = st.binary(max_size=24)
        return st.none() | base if field_type.nullable else base
    if isinstance(field_type, Array):
        base = st.lists(for_type(field_type.element, depth + 1), max_size=3 if depth < 2 else 2)
        return st.none() | base if field_type.nullable else base
    if isinstance(field_type, StructType):
        return for_schema(field_type.schema, depth + 1)
    raise TypeError(f"no strategy for {field_type!r}")


def for_schema(schema: Schema, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Plain dicts holding a value for every field of ``schema``."""
    fields = {f.name: for_type(f.type, depth) for f in schema.fields}
    # Tagged fields (KIP-482) take values too; the raw tags left over use only the tag
    # numbers the schema does not know (a known one would be decoded into its field).
    fields.update({f.name: for_type(f.type, depth) for f in schema.tagged})
    known = {f.tag for f in schema.tagged}
    if schema.flexible:
        fields["tagged_fields"] = st.dictionaries(
            st.integers(0, 20).filter(lambda tag: tag not in known), st.binary(max_size=6),
            max_size=2)
    return st.fixed_dictionaries(fields)
