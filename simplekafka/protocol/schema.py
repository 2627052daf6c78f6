"""Declarative message schemas, and the interpreter that walks them field by field.

Kafka describes every request and response as an ordered list of typed fields
per API version (its ``clients/src/main/resources/common/message/*.json``). We
do the same: a :class:`Schema` is a list of :class:`Field` objects. This
module reads and writes a schema by walking that list (``read_slow``,
``write_slow``): the reference behaviour, the path that names the failing
field, and the walk the dissector watches (a :class:`SchemaVisitor` sees every
field with its byte range). The fast paths are generated from the same list by
:mod:`simplekafka.protocol.codegen` when a schema is built.

Decoded messages are :class:`Struct` objects: attribute access by snake_case
field name, ``to_dict()`` for plain data. For encoding, plain dicts work
wherever a Struct is expected, and missing fields take their defaults (as in
Kafka's generated message classes), so one response object can be encoded at
whatever version the client asked for: a field of another version of the same
message is dropped. A key that no version of the message has (a misspelling) is
an :class:`EncodeError` naming the message, version and path. ``write_slow``
always checks; the compiled ``write`` checks only when strict encoding is on
(:func:`strict_encoding`, or ``SIMPLEKAFKA_STRICT_ENCODE=1`` in the
environment, which the test suite sets), because a key-set check per nested
dict would cost the hot path about a tenth of its time.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Collection, Iterable, Mapping

from simplekafka.protocol import primitives as p
from simplekafka.protocol.codegen import compile_read, compile_read_dict, compile_write
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.fields import (
    _MISSING,
    BOOL,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    SMALL_ARRAY,
    UINT32,
    UUID,
    Array,
    Buffer,
    Bytes,
    EncodeError,
    Field,
    FieldType,
    Fixed,
    MessageSchema,
    Records,
    String,
    Struct,
    StructType,
    Uuid,
    is_fixed,
    retag,
    untag,
)

# The field model lives in protocol.fields (which the compiler shares); it is re-exported
# here, so that a schema and its fields are imported from one place.
__all__ = [
    "BOOL",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "SMALL_ARRAY",
    "UINT32",
    "UUID",
    "Array",
    "Buffer",
    "Bytes",
    "EncodeError",
    "Field",
    "FieldType",
    "Fixed",
    "MessageSchema",
    "Records",
    "Schema",
    "SchemaVisitor",
    "String",
    "Struct",
    "StructType",
    "Uuid",
    "is_fixed",
    "strict_encoding",
]

STRICT_ENV = "SIMPLEKAFKA_STRICT_ENCODE"
"""Set to ``1`` to make every ``Schema.write`` refuse unknown keys (the test suite does)."""

_strict = os.environ.get(STRICT_ENV, "") not in ("", "0")


def strict_encoding(on: bool | None = None) -> bool:
    """Whether ``Schema.write`` checks dict keys before encoding; ``on`` sets it.

    Returns the previous setting, so a caller can restore it.
    """
    global _strict
    previous = _strict
    if on is not None:
        _strict = on
    return previous


# Reads a field value (or the default given) from a dict or an object; the field type's
# write checks the value.
FieldGetter = Callable[[str, object], object]


def _getter(value: object) -> FieldGetter:
    """How to read field values from a Struct, a dict, or any object with attributes."""
    if isinstance(value, Mapping):
        return value.get
    if value is None:
        raise EncodeError("None given where a structure was expected")

    def get(name: str, default: object) -> object:
        return getattr(value, name, default)

    return get


class Schema:
    """An ordered field list for one message (or nested structure) at one version.

    ``flexible`` adds the trailing tagged-field block (decoded into the
    ``tagged_fields`` attribute as ``{tag: raw bytes}``). ``known_names`` lists
    the field names of every version of the message, so ``make`` can accept a
    field that this version simply lacks (it is dropped) while still catching
    typos.

    ``schema.read(buf, pos) -> (struct, new_pos)`` and ``schema.write(out,
    value)`` are the compiled fast paths (see :mod:`simplekafka.protocol.codegen`;
    ``schema.source`` holds their text). ``read_slow``/``write_slow`` interpret
    the field list instead; they are the reference the compiled code is tested
    against, they find the exact field when encoding fails, and ``read_slow``
    reports each field to a :class:`SchemaVisitor` (the dissector's tree).
    """

    def __init__(
        self,
        name: str,
        fields: Iterable[Field],
        flexible: bool = False,
        version: int | None = None,
        known_names: Iterable[str] = (),
    ):
        self.name = name
        given = tuple(fields)
        # Tagged fields (KIP-482) are not in wire order: they ride in the tagged-field block.
        self.fields: tuple[Field, ...] = tuple(f for f in given if f.tag is None)
        self.tagged: tuple[Field, ...] = tuple(
            sorted((f for f in given if f.tag is not None), key=lambda f: f.tag or 0))
        if self.tagged and not flexible:
            raise ValueError(f"{name}: tagged fields in a version that is not flexible")
        self.flexible = flexible
        self.version = version
        self.names = tuple(f.name for f in self.fields)
        tagged_names = tuple(f.name for f in self.tagged)
        # tagged_fields in every version, as Kafka's classes keep unknown tagged fields in all
        self.known_names = (frozenset(known_names) | set(self.names) | set(tagged_names)
                            | {"tagged_fields"})
        self.min_size = sum(f.type.min_size for f in self.fields) + (1 if flexible else 0)
        slots = self.names + tagged_names + (("tagged_fields",) if flexible else ())
        namespace = {"__slots__": slots, "_schema": self, "_fields": slots}
        self.struct_class: type[Struct] = type(name.replace(".", "_"), (Struct,), namespace)
        # The fast paths, generated from the field list (protocol.codegen); ``source``
        # keeps the text of each generated function.
        self.source: dict[str, str] = {}
        self.read: Callable[[Buffer, int], tuple[Struct, int]] = compile_read(self)
        # The same decoder building dicts (the broker's requests): compiled on first use.
        self.read_dict: Callable[[Buffer, int], tuple[dict[str, object], int]] = \
            self._first_read_dict
        self._write_fast: Callable[[bytearray, object], None] = compile_write(self)

    def _first_read_dict(self, buf: Buffer, pos: int) -> tuple[dict[str, object], int]:
        self.read_dict = compile_read_dict(self)
        return self.read_dict(buf, pos)

    # -- building values ----------------------------------------------------------------

    def make(self, **fields: object) -> Struct:
        """A Struct of this schema; missing fields take their defaults."""
        obj = object.__new__(self.struct_class)
        for name, value in self._fill(fields).items():
            setattr(obj, name, value)
        return obj

    def _fill(self, given: dict[str, object]) -> dict[str, object]:
        unknown = set(given) - self.known_names
        if unknown:
            raise TypeError(
                f"{self.name} has no field(s) {', '.join(sorted(unknown))}; "
                f"fields: {', '.join(self.names)}"
            )
        values: dict[str, object] = {}
        for f in self.fields:
            value = given.get(f.name, _MISSING)
            values[f.name] = f.make_default() if value is _MISSING else value
        for f in self.tagged:
            value = given.get(f.name, _MISSING)
            values[f.name] = f.make_default() if value is _MISSING else value
        if self.flexible:
            values["tagged_fields"] = given.get("tagged_fields") or {}
        return values

    # -- decoding -----------------------------------------------------------------------

    def read_slow(self, buf: Buffer, pos: int = 0,
                  visitor: SchemaVisitor | None = None) -> tuple[Struct, int]:
        """Decode one struct field by field, without the compiled code (reference path).

        ``visitor`` is told of every field, array and nested struct as it is read.
        """
        return _walk_struct(self, buf, pos, visitor or _SILENT)

    def decode(self, buf: Buffer) -> Struct:
        """Decode a whole buffer; trailing bytes are an error (a sign of a wrong version)."""
        try:
            struct_, end = self.read(buf, 0)
        except ProtocolError:
            raise
        except (struct.error, IndexError, ValueError, OverflowError) as exc:  # pragma: no cover
            raise ProtocolError(f"cannot decode {self.name}: {exc}", offset=None) from None
        if end != len(buf):
            raise ProtocolError(
                f"{self.name} ends at offset {end} but the buffer has {len(buf) - end} more "
                f"bytes",
                offset=end,
                expected="end of message",
            )
        return struct_

    # -- encoding -----------------------------------------------------------------------

    def write(self, out: bytearray, value: object) -> None:
        """Append the encoding of ``value`` (a Struct, a dict, or any object with attributes)."""
        if _strict:
            self.check(value)
        mark = len(out)
        try:
            self._write_fast(out, value)
        except (struct.error, TypeError, AttributeError, ValueError, OverflowError):
            # EncodeError is a ValueError too: all land here, and the slow path names the field.
            del out[mark:]
            self.write_slow(out, value)  # raises EncodeError naming the field
            raise EncodeError(f"{self.name}: cannot encode {value!r}") from None

    def check(self, value: object) -> None:
        """Raise :class:`EncodeError` if a dict in ``value`` has a key no version has.

        The error names the message, the version and the path, e.g. ``ProduceResponse
        v8: unknown field responses[0].partition_responses[0].eror_code``.
        """
        _check_keys(self, value, "", self)

    def write_slow(self, out: bytearray, value: object) -> None:
        """Encode field by field, naming the field that fails (reference and diagnosis path)."""
        self.check(value)
        self._write_slow(out, value)

    def _write_slow(self, out: bytearray, value: object) -> None:
        get = _getter(value)
        for f in self.fields:
            field_value = get(f.name, f.default)
            try:
                if isinstance(f.type, StructType):
                    f.type.schema._write_slow(out, field_value)
                elif isinstance(f.type, Array) and isinstance(f.type.element, StructType):
                    if field_value is None:
                        f.type.write(out, None)
                        continue
                    if not isinstance(field_value, Collection):
                        raise TypeError(f"{type(field_value).__name__} is not a list")
                    if f.type.compact:
                        p.write_unsigned_varint(out, len(field_value) + 1)
                    else:
                        out += p.INT32.pack(len(field_value))
                    for item in field_value:
                        f.type.element.schema._write_slow(out, item)
                elif isinstance(f.type, Fixed):
                    out += f.type.struct.pack(field_value)
                else:
                    f.type.write(out, field_value)
            except EncodeError as exc:
                if str(exc).startswith(self.name.split(".")[0]):
                    raise
                raise EncodeError(f"{self.name}.{f.name}: {exc}") from None
            except (struct.error, TypeError, AttributeError, ValueError, OverflowError) as exc:
                raise EncodeError(
                    f"{self.name}.{f.name}: cannot encode {field_value!r} as {f.type.name}: {exc}"
                ) from None
        if self.flexible:
            raw = get("tagged_fields", None)
            if raw and not isinstance(raw, dict):
                raise EncodeError(f"{self.name}.tagged_fields: {raw!r} is not a dict of tags")
            tags = raw if isinstance(raw, dict) else None
            if self.tagged:
                try:
                    tags = retag(self.tagged)(tags, *(get(f.name, f.default)
                                                      for f in self.tagged))
                except (struct.error, TypeError, AttributeError, ValueError,
                        OverflowError) as exc:
                    raise EncodeError(f"{self.name}: a tagged field: {exc}") from None
            p.write_tagged_fields(out, tags)

    def encode(self, value: object) -> bytes:
        """The bytes of ``value`` (Struct or dict) at this schema's version."""
        out = bytearray()
        self.write(out, value)
        return bytes(out)

    def __repr__(self) -> str:
        version = "" if self.version is None else f" v{self.version}"
        return f"<Schema {self.name}{version}: {', '.join(self.names)}>"


def _check_keys(schema: MessageSchema, value: object, path: str, top: MessageSchema) -> None:
    """The walk behind ``Schema.check``: every dict's keys against its schema's names."""
    if isinstance(value, Mapping):
        unknown = value.keys() - schema.known_names
        if unknown:
            names = ", ".join(path + str(name) for name in sorted(unknown, key=str))
            raise EncodeError(f"{top.name} v{top.version}: unknown field {names}")
        get: FieldGetter = value.get
    elif isinstance(value, Struct):  # its slots are its schema's: only its children to walk
        get = _getter(value)
    else:
        return  # None (the encoder names it) or any object with attributes: nothing to list
    for f in schema.fields:
        t = f.type
        if isinstance(t, StructType):
            _check_keys(t.schema, get(f.name, None), f"{path}{f.name}.", top)
        elif isinstance(t, Array) and isinstance(t.element, StructType):
            items = get(f.name, None)
            if isinstance(items, (list, tuple)):
                for index, item in enumerate(items):
                    _check_keys(t.element.schema, item, f"{path}{f.name}[{index}].", top)


# --- the interpreter ---------------------------------------------------------------------


class SchemaVisitor:
    """What the interpreter reports as it walks a schema; these defaults do nothing.

    The dissector subclasses it to hang a tree of named byte ranges on the
    walk, so that the codec and the dissector read bytes the same way.
    """

    def read_count(self, array: Array, buf: Buffer, pos: int) -> tuple[int, int]:
        """An array's element count (-1 for null) and where its elements start."""
        return array.read_count(buf, pos)

    def enter(self, name: str, type_name: str, start: int, count: int | None, body: int) -> None:
        """A nested struct (``count`` None) or an array of ``count`` elements begins."""

    def element(self, end: int) -> None:
        """An element of the innermost array has been read; the array now ends at ``end``."""

    def leave(self, end: int) -> None:
        """The struct or array entered last ends at ``end``."""

    def field(self, name: str, field_type: FieldType | None, type_name: str, start: int,
              end: int, value: object) -> None:
        """A leaf field read from ``start`` to ``end``."""

    def failed(self, exc: ProtocolError, name: str, type_name: str) -> ProtocolError:
        """The error to raise when the leaf ``name`` does not read."""
        return exc


_SILENT = SchemaVisitor()


def _walk_struct(schema: MessageSchema, buf: Buffer, pos: int,
                 visitor: SchemaVisitor) -> tuple[Struct, int]:
    obj = object.__new__(schema.struct_class)
    for f in schema.fields:
        value, pos = _walk_value(f.name, f.type, buf, pos, visitor)
        setattr(obj, f.name, value)
    if schema.flexible:
        tags, pos = _walk_leaf("tagged_fields", None, "tagged_fields", p.read_tagged_fields,
                               buf, pos, visitor)
        setattr(obj, "tagged_fields", tags)  # noqa: B010  (a slot of this schema's class)
        if schema.tagged:
            untag(schema.tagged, schema.name)(obj)
    return obj, pos


def _walk_value(name: str, field_type: FieldType, buf: Buffer, pos: int,
                visitor: SchemaVisitor) -> tuple[object, int]:
    if isinstance(field_type, StructType):
        visitor.enter(name, field_type.name, pos, None, pos)
        value, end = _walk_struct(field_type.schema, buf, pos, visitor)
        visitor.leave(end)
        return value, end
    if isinstance(field_type, Array):
        count, body = visitor.read_count(field_type, buf, pos)
        visitor.enter(name, field_type.name, pos, count, body)
        if count < 0:
            visitor.leave(body)
            return None, body
        items: list[object] = []
        for index in range(count):
            item, body = _walk_value(str(index), field_type.element, buf, body, visitor)
            items.append(item)
            visitor.element(body)
        visitor.leave(body)
        return items, body
    return _walk_leaf(name, field_type, field_type.name, field_type.read, buf, pos, visitor)


def _walk_leaf(name: str, field_type: FieldType | None, type_name: str,
               read: Callable[[Buffer, int], tuple[object, int]], buf: Buffer, pos: int,
               visitor: SchemaVisitor) -> tuple[object, int]:
    try:
        value, end = read(buf, pos)
        visitor.field(name, field_type, type_name, pos, end, value)
    except ProtocolError as exc:
        raise visitor.failed(exc, name, type_name) from None
    return value, end
