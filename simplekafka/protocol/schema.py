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
wherever a Struct is expected, and missing fields take their defaults, so one
response object can be encoded at whatever version the client asked for.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from simplekafka.protocol import primitives as p
from simplekafka.protocol.errors import ProtocolError

Buffer = bytes | bytearray | memoryview

_MISSING: Any = object()
SMALL_ARRAY = 17  # arrays of fixed-width values shorter than this use precompiled structs


class EncodeError(ProtocolError, ValueError):
    """A value that cannot be encoded (wrong type, out of range); names the field."""


# --- field types -----------------------------------------------------------------------


class FieldType:
    """How one field's value is laid out; subclasses implement ``read`` and ``write``."""

    name = "?"
    fmt: str | None = None  # struct format char, for fixed-width types only
    min_size = 0  # the fewest bytes a value can take (for sanity checks on counts)

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        raise NotImplementedError

    def write(self, out: bytearray, value: Any) -> None:
        raise NotImplementedError

    def default(self) -> Any:
        return None

    def __repr__(self) -> str:
        return self.name


class Fixed(FieldType):
    """A fixed-width big-endian number (or bool)."""

    def __init__(self, name: str, fmt: str, lo: int, hi: int, default: Any = 0):
        self.name = name
        self.fmt = fmt
        self.struct = struct.Struct(">" + fmt)
        self.min_size = self.struct.size
        self.lo, self.hi = lo, hi
        self._default = default

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        return p.read_fixed(self.struct, buf, pos, self.name)

    def write(self, out: bytearray, value: Any) -> None:
        out += self.struct.pack(value)

    def default(self) -> Any:
        return self._default


INT8 = Fixed("int8", "b", -(2**7), 2**7 - 1)
INT16 = Fixed("int16", "h", p.INT16_MIN, p.INT16_MAX)
INT32 = Fixed("int32", "i", p.INT32_MIN, p.INT32_MAX)
INT64 = Fixed("int64", "q", p.INT64_MIN, p.INT64_MAX)
UINT32 = Fixed("uint32", "I", 0, 2**32 - 1)
BOOL = Fixed("bool", "?", 0, 1, default=False)


class Uuid(FieldType):
    """16 raw bytes (topic ids); all zeros means "no id"."""

    name = "uuid"
    fmt = "16s"
    min_size = 16

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        if pos + 16 > len(buf):
            raise p.short_read(pos, 16, len(buf) - pos, self.name)
        return bytes(buf[pos : pos + 16]), pos + 16

    def write(self, out: bytearray, value: Any) -> None:
        if len(value) != 16:
            raise EncodeError(f"uuid must be 16 bytes, got {len(value)}")
        out += value

    def default(self) -> Any:
        return bytes(16)


UUID = Uuid()


class String(FieldType):
    """UTF-8 text: int16 length, or a compact varint length in flexible versions."""

    def __init__(self, nullable: bool = False, compact: bool = False):
        self.nullable = nullable
        self.compact = compact
        self.name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + "string"
        self.min_size = 1 if compact else 2

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        if self.compact:
            return p.read_compact_string(buf, pos, self.nullable)
        return p.read_string(buf, pos, self.nullable)

    def write(self, out: bytearray, value: Any) -> None:
        if value is None and not self.nullable:
            raise EncodeError("null given for a non-nullable string")
        if self.compact:
            p.write_compact_string(out, value)
        else:
            p.write_string(out, value)

    def default(self) -> Any:
        return None if self.nullable else ""


class Bytes(FieldType):
    """Raw bytes: int32 length, or a compact varint length in flexible versions."""

    kind = "bytes"

    def __init__(self, nullable: bool = False, compact: bool = False):
        self.nullable = nullable
        self.compact = compact
        self.name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + self.kind
        self.min_size = 1 if compact else 4

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        if self.compact:
            return p.read_compact_bytes(buf, pos, self.nullable)
        return p.read_bytes(buf, pos, self.nullable)

    def write(self, out: bytearray, value: Any) -> None:
        if value is None and not self.nullable:
            raise EncodeError(f"null given for non-nullable {self.kind}")
        if self.compact:
            p.write_compact_bytes(out, value)
        else:
            p.write_bytes(out, value)

    def default(self) -> Any:
        return None if self.nullable else b""


class Records(Bytes):
    """A record set (RecordBatch bytes), kept raw: the broker never decodes it.

    Defaults to ``b""`` even where nullable, because clients choke on a null
    record set for an empty partition.
    """

    kind = "records"

    def default(self) -> Any:
        return b""


class Array(FieldType):
    """A list of one element type: int32 count (-1 = null) or compact ``count + 1``."""

    def __init__(self, element: FieldType, nullable: bool = False, compact: bool = False):
        self.element = element
        self.nullable = nullable
        self.compact = compact
        self.name = f"{'compact_' if compact else ''}{'nullable_' if nullable else ''}[]{element}"
        self.min_size = 1 if compact else 4
        self._read_element = element.read
        self._write_element = element.write
        # Arrays of one fixed-width type decode with a single unpack_from, and short ones
        # (replica lists, partition ids) with a precompiled struct, count included.
        self._fixed_fmt = element.fmt if isinstance(element, Fixed) else None
        if self._fixed_fmt is not None:
            count_fmt = "" if compact else "i"
            self._packers = [
                struct.Struct(f">{count_fmt}{n}{self._fixed_fmt}").pack for n in range(SMALL_ARRAY)
            ]
            self._unpackers = [
                struct.Struct(f">{n}{self._fixed_fmt}").unpack_from for n in range(SMALL_ARRAY)
            ]

    def read_count(self, buf: Buffer, pos: int) -> tuple[int, int]:
        """The element count (-1 for a null array), checked against the bytes left."""
        start = pos
        if self.compact:
            count, pos = p.read_compact_length(buf, pos, self.nullable, "array")
        else:
            count, pos = p.read_fixed(p.INT32, buf, pos, "int32 array length")
        if count < 0:
            if count == -1 and self.nullable:
                return -1, pos
            raise ProtocolError(
                f"array length {count} at offset {start} is negative",
                offset=start,
                expected="an array length >= 0" + (" or -1" if self.nullable else ""),
            )
        element_size = self.element.min_size
        if element_size and count * element_size > len(buf) - pos:
            raise ProtocolError(
                f"array of {count} {self.element} at offset {start} needs at least "
                f"{count * element_size} bytes but only {len(buf) - pos} remain",
                offset=start,
                expected=f"an array length of at most {(len(buf) - pos) // element_size}",
            )
        return count, pos

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        count, pos = self.read_count(buf, pos)
        if count < 0:
            return None, pos
        element_size = self.element.min_size
        if self._fixed_fmt is not None:
            if count < SMALL_ARRAY:
                items = self._unpackers[count](buf, pos)
            else:
                items = struct.unpack_from(f">{count}{self._fixed_fmt}", buf, pos)
            return list(items), pos + count * element_size
        read = self._read_element
        values: list[Any] = []
        append = values.append
        for _ in range(count):
            item, pos = read(buf, pos)
            append(item)
        return values, pos

    def write(self, out: bytearray, value: Any) -> None:
        if value is None:
            if not self.nullable:
                raise EncodeError(f"null given for non-nullable array {self.name}")
            out += b"\x00" if self.compact else b"\xff\xff\xff\xff"
            return
        count = len(value)
        if self._fixed_fmt is not None and count < SMALL_ARRAY:
            if self.compact:
                p.write_unsigned_varint(out, count + 1)
                out += self._packers[count](*value)
            else:
                out += self._packers[count](count, *value)
            return
        if self.compact:
            p.write_unsigned_varint(out, count + 1)
        else:
            out += p.INT32.pack(count)
        if self._fixed_fmt is not None:
            out += struct.pack(f">{count}{self._fixed_fmt}", *value)
            return
        write = self._write_element
        for item in value:
            write(out, item)

    def default(self) -> Any:
        return []


class StructType(FieldType):
    """A nested structure (array elements, mostly)."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.name = schema.name
        self.min_size = schema.min_size

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        return self.schema.read(buf, pos)

    def write(self, out: bytearray, value: Any) -> None:
        self.schema.write(out, value)

    def default(self) -> Any:
        return self.schema.make()


# --- fields, structs, schemas ------------------------------------------------------------


class Field:
    """One named, typed field of a schema (at one version)."""

    __slots__ = ("_fresh", "default", "name", "type")

    def __init__(self, name: str, type: FieldType, default: Any = _MISSING):
        self.name = name
        self.type = type
        self.default = type.default() if default is _MISSING else default
        # Lists and structs must not be shared between messages: make a new one each time.
        self._fresh = default is _MISSING and isinstance(type, (Array, StructType))

    def make_default(self) -> Any:
        """The default value, freshly made where it is mutable."""
        return self.type.default() if self._fresh else self.default

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type!r})"


class Struct:
    """A decoded (or to-be-encoded) message: fields as attributes.

    ``Struct(schema, topic="t", partition=0)`` is the same as
    ``schema.make(topic="t", partition=0)``. Each schema has its own subclass
    with one slot per field, so ``struct.schema`` says which message and
    version it is, and a typo in an attribute name fails loudly.
    """

    __slots__ = ()
    _schema: Schema
    _fields: tuple[str, ...] = ()

    def __new__(cls, schema: Schema, /, **fields: Any) -> Struct:
        return schema.make(**fields)

    @property
    def schema(self) -> Schema:
        """The schema (name and version) this struct was built or decoded with."""
        return self._schema

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists, for printing, comparing and JSON."""
        return {name: _plain(getattr(self, name)) for name in self._fields}

    def items(self) -> list[tuple[str, Any]]:
        """(field name, value) pairs in wire order."""
        return [(name, getattr(self, name)) for name in self._fields]

    def __getitem__(self, name: str) -> Any:
        if name not in self._fields:
            raise KeyError(name)
        return getattr(self, name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Struct):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == _plain(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.items())
        return f"{self._schema.name}({inner})"


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def _getter(value: Any) -> Callable[[str, Any], Any]:
    """How to read field values from a Struct, a dict, or any object with attributes."""
    if isinstance(value, Mapping):
        return value.get
    if value is None:
        raise EncodeError("None given where a structure was expected")

    def get(name: str, default: Any) -> Any:
        return getattr(value, name, default)

    return get


def is_fixed(field_type: FieldType) -> bool:
    return field_type.fmt is not None and not isinstance(field_type, Uuid)


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
        self.fields: tuple[Field, ...] = tuple(fields)
        self.flexible = flexible
        self.version = version
        self.names = tuple(f.name for f in self.fields)
        self.known_names = frozenset(known_names) | set(self.names)
        if flexible:
            self.known_names |= {"tagged_fields"}
        self.min_size = sum(f.type.min_size for f in self.fields) + (1 if flexible else 0)
        slots = self.names + (("tagged_fields",) if flexible else ())
        namespace = {"__slots__": slots, "_schema": self, "_fields": slots}
        self.struct_class: type[Struct] = type(name.replace(".", "_"), (Struct,), namespace)
        # The fast paths, generated from the field list (protocol.codegen); ``source``
        # keeps the text of each generated function.
        from simplekafka.protocol.codegen import compile_read, compile_write

        self.source: dict[str, str] = {}
        self.read: Callable[[Buffer, int], tuple[Struct, int]] = compile_read(self)
        self._write_fast: Callable[[bytearray, Any], None] = compile_write(self)

    # -- building values ----------------------------------------------------------------

    def make(self, **fields: Any) -> Struct:
        """A Struct of this schema; missing fields take their defaults."""
        obj = object.__new__(self.struct_class)
        for name, value in self._fill(fields).items():
            setattr(obj, name, value)
        return obj

    def _fill(self, given: dict[str, Any]) -> dict[str, Any]:
        unknown = set(given) - self.known_names
        if unknown:
            raise TypeError(
                f"{self.name} has no field(s) {', '.join(sorted(unknown))}; "
                f"fields: {', '.join(self.names)}"
            )
        values = {}
        for f in self.fields:
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

    def write(self, out: bytearray, value: Any) -> None:
        """Append the encoding of ``value`` (a Struct, a dict, or any object with attributes)."""
        mark = len(out)
        try:
            self._write_fast(out, value)
        except (struct.error, TypeError, AttributeError, ValueError, OverflowError):
            # EncodeError is a ValueError too: all land here, and the slow path names the field.
            del out[mark:]
            self.write_slow(out, value)  # raises EncodeError naming the field
            raise EncodeError(f"{self.name}: cannot encode {value!r}") from None

    def write_slow(self, out: bytearray, value: Any) -> None:
        """Encode field by field, naming the field that fails (reference and diagnosis path)."""
        get = _getter(value)
        for f in self.fields:
            field_value = get(f.name, f.default)
            try:
                if isinstance(f.type, StructType):
                    f.type.schema.write_slow(out, field_value)
                elif isinstance(f.type, Array) and isinstance(f.type.element, StructType):
                    if field_value is None:
                        f.type.write(out, None)
                        continue
                    if f.type.compact:
                        p.write_unsigned_varint(out, len(field_value) + 1)
                    else:
                        out += p.INT32.pack(len(field_value))
                    for item in field_value:
                        f.type.element.schema.write_slow(out, item)
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
            p.write_tagged_fields(out, get("tagged_fields", None))

    def encode(self, value: Any) -> bytes:
        """The bytes of ``value`` (Struct or dict) at this schema's version."""
        out = bytearray()
        self.write(out, value)
        return bytes(out)

    def __repr__(self) -> str:
        version = "" if self.version is None else f" v{self.version}"
        return f"<Schema {self.name}{version}: {', '.join(self.names)}>"


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
              end: int, value: Any) -> None:
        """A leaf field read from ``start`` to ``end``."""

    def failed(self, exc: ProtocolError, name: str, type_name: str) -> ProtocolError:
        """The error to raise when the leaf ``name`` does not read."""
        return exc


_SILENT = SchemaVisitor()


def _walk_struct(schema: Schema, buf: Buffer, pos: int,
                 visitor: SchemaVisitor) -> tuple[Struct, int]:
    obj = object.__new__(schema.struct_class)
    for f in schema.fields:
        value, pos = _walk_value(f.name, f.type, buf, pos, visitor)
        setattr(obj, f.name, value)
    if schema.flexible:
        tags, pos = _walk_leaf("tagged_fields", None, "tagged_fields", p.read_tagged_fields,
                               buf, pos, visitor)
        setattr(obj, "tagged_fields", tags)  # noqa: B010  (a slot of this schema's class)
    return obj, pos


def _walk_value(name: str, field_type: FieldType, buf: Buffer, pos: int,
                visitor: SchemaVisitor) -> tuple[Any, int]:
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
        items = []
        for index in range(count):
            item, body = _walk_value(str(index), field_type.element, buf, body, visitor)
            items.append(item)
            visitor.element(body)
        visitor.leave(body)
        return items, body
    return _walk_leaf(name, field_type, field_type.name, field_type.read, buf, pos, visitor)


def _walk_leaf(name: str, field_type: FieldType | None, type_name: str,
               read: Callable[[Buffer, int], tuple[Any, int]], buf: Buffer, pos: int,
               visitor: SchemaVisitor) -> tuple[Any, int]:
    try:
        value, end = read(buf, pos)
        visitor.field(name, field_type, type_name, pos, end, value)
    except ProtocolError as exc:
        raise visitor.failed(exc, name, type_name) from None
    return value, end
