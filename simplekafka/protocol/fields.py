"""The field model both the interpreter and the compiler need: types, fields, structs.

A message schema (:class:`simplekafka.protocol.schema.Schema`) is an ordered
list of :class:`Field` objects, each with a :class:`FieldType` that knows how
its value is laid out on the wire; decoded messages are :class:`Struct`
objects. :mod:`simplekafka.protocol.schema` interprets a field list and
:mod:`simplekafka.protocol.codegen` compiles one; both import this module and
the compiler never imports ``schema`` (``Schema`` imports the compiler), so the
protocol package has no import circle (stages/stage1_protocol/test_import_cycles.py).
A nested structure's schema is seen here through :class:`MessageSchema`, the
part of ``Schema`` that field types, structs and the compiler use.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence, Sized
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeAlias, TypeVar, cast

from simplekafka.protocol import primitives as p
from simplekafka.protocol.errors import ProtocolError

Buffer = bytes | bytearray | memoryview
T = TypeVar("T")
E = TypeVar("E")
Number: TypeAlias = int | float  # bool is an int

_MISSING: Final = object()  # "no default given" (identity only: never a field value)
SMALL_ARRAY = 17  # arrays of fixed-width values shorter than this use precompiled structs


class EncodeError(ProtocolError, ValueError):
    """A value that cannot be encoded (wrong type, out of range); names the field."""


# --- field types -----------------------------------------------------------------------


class FieldType(Generic[T]):
    """How one field's value (a ``T``) is laid out; subclasses implement ``read`` and ``write``."""

    name = "?"
    fmt: str | None = None  # struct format char, for fixed-width types only
    min_size = 0  # the fewest bytes a value can take (for sanity checks on counts)

    def read(self, buf: Buffer, pos: int) -> tuple[T, int]:
        raise NotImplementedError

    def write(self, out: bytearray, value: T) -> None:
        raise NotImplementedError

    def default(self) -> T:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


class Fixed(FieldType[Number]):
    """A fixed-width big-endian number (or bool)."""

    def __init__(self, name: str, fmt: str, lo: float, hi: float, default: Number = 0):
        self.name = name
        self.fmt = fmt
        self.struct = struct.Struct(">" + fmt)
        self.min_size = self.struct.size
        self.lo, self.hi = lo, hi
        self._default = default

    def read(self, buf: Buffer, pos: int) -> tuple[Number, int]:
        return p.read_fixed(self.struct, buf, pos, self.name)

    def write(self, out: bytearray, value: Number) -> None:
        out += self.struct.pack(value)

    def default(self) -> Number:
        return self._default


INT8 = Fixed("int8", "b", -(2**7), 2**7 - 1)
INT16 = Fixed("int16", "h", p.INT16_MIN, p.INT16_MAX)
INT32 = Fixed("int32", "i", p.INT32_MIN, p.INT32_MAX)
INT64 = Fixed("int64", "q", p.INT64_MIN, p.INT64_MAX)
UINT32 = Fixed("uint32", "I", 0, 2**32 - 1)
BOOL = Fixed("bool", "?", 0, 1, default=False)
# An IEEE 754 double (the client quota values of DescribeClientQuotas/AlterClientQuotas).
FLOAT64 = Fixed("float64", "d", float("-inf"), float("inf"), default=0.0)


class Uuid(FieldType[bytes]):
    """16 raw bytes (topic ids); all zeros means "no id"."""

    name = "uuid"
    fmt = "16s"
    min_size = 16

    def read(self, buf: Buffer, pos: int) -> tuple[bytes, int]:
        if pos + 16 > len(buf):
            raise p.short_read(pos, 16, len(buf) - pos, self.name)
        return bytes(buf[pos : pos + 16]), pos + 16

    def write(self, out: bytearray, value: bytes) -> None:
        if len(value) != 16:
            raise EncodeError(f"uuid must be 16 bytes, got {len(value)}")
        out += value

    def default(self) -> bytes:
        return bytes(16)


UUID = Uuid()


class String(FieldType[str | None]):
    """UTF-8 text: int16 length, or a compact varint length in flexible versions."""

    def __init__(self, nullable: bool = False, compact: bool = False):
        self.nullable = nullable
        self.compact = compact
        self.name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + "string"
        self.min_size = 1 if compact else 2

    def read(self, buf: Buffer, pos: int) -> tuple[str | None, int]:
        if self.compact:
            return p.read_compact_string(buf, pos, self.nullable)
        return p.read_string(buf, pos, self.nullable)

    def write(self, out: bytearray, value: str | None) -> None:
        if value is None and not self.nullable:
            raise EncodeError("null given for a non-nullable string")
        if self.compact:
            p.write_compact_string(out, value)
        else:
            p.write_string(out, value)

    def default(self) -> str | None:
        return None if self.nullable else ""


class Bytes(FieldType[Buffer | None]):
    """Raw bytes: int32 length, or a compact varint length in flexible versions."""

    kind = "bytes"

    def __init__(self, nullable: bool = False, compact: bool = False):
        self.nullable = nullable
        self.compact = compact
        self.name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + self.kind
        self.min_size = 1 if compact else 4

    def read(self, buf: Buffer, pos: int) -> tuple[Buffer | None, int]:
        if self.compact:
            return p.read_compact_bytes(buf, pos, self.nullable)
        return p.read_bytes(buf, pos, self.nullable)

    def write(self, out: bytearray, value: Buffer | None) -> None:
        if value is None and not self.nullable:
            raise EncodeError(f"null given for non-nullable {self.kind}")
        if self.compact:
            p.write_compact_bytes(out, value)
        else:
            p.write_bytes(out, value)

    def default(self) -> Buffer | None:
        return None if self.nullable else b""


# Record sets the codec writes itself (a tuple named once: a union in the call would be
# built on every record set).
_BYTES_LIKE = (bytes, bytearray, memoryview)


class Records(Bytes):
    """A record set (RecordBatch bytes), kept raw: the broker never decodes it.

    Defaults to ``b""`` even where nullable, because clients choke on a null
    record set for an empty partition. A value that is not bytes but has a
    length (the broker's unread file region) is encoded as its length only and
    kept by reference in a :class:`PiecedOutput`: its bytes are the sender's
    business (the codec stays sans-I/O and never reads it).
    """

    kind = "records"

    def write(self, out: bytearray, value: Sized | None) -> None:
        if value is None or isinstance(value, _BYTES_LIKE):
            Bytes.write(self, out, value)
            return
        if not isinstance(out, PiecedOutput):
            raise EncodeError(f"{type(value).__name__} record set needs a PiecedOutput")
        if self.compact:
            p.write_unsigned_varint(out, len(value) + 1)
        else:
            out += p.INT32.pack(len(value))
        out.hold(value)

    def default(self) -> bytes:
        return b""


class PiecedOutput(bytearray):
    """An encoding that may hold record sets it does not contain (see :class:`Records`).

    ``pieces()`` is the message as a list: bytes, then a held value, then the
    bytes after it, and so on; whoever writes the message sends each in turn.
    """

    def __init__(self, initial: bytes = b""):
        super().__init__(initial)
        self.held: list[tuple[int, Sized]] = []

    def hold(self, value: Sized) -> None:
        """Keep ``value`` (its length already encoded) at the current position."""
        self.held.append((len(self), value))

    def pieces(self) -> list[Sized]:
        """The message as bytes and held values, in order."""
        out: list[Sized] = []
        start = 0
        for position, value in self.held:
            if position > start:
                out.append(bytes(self[start:position]))
            out.append(value)
            start = position
        if len(self) > start:
            out.append(bytes(self[start:]))
        return out


class Array(FieldType["list[E] | None"]):
    """A list of one element type: int32 count (-1 = null) or compact ``count + 1``."""

    def __init__(self, element: FieldType[E], nullable: bool = False, compact: bool = False):
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

    def read(self, buf: Buffer, pos: int) -> tuple[list[E] | None, int]:
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
        values: list[E] = []
        append = values.append
        for _ in range(count):
            item, pos = read(buf, pos)
            append(item)
        return values, pos

    def write(self, out: bytearray, value: Sequence[E] | None) -> None:
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

    def default(self) -> list[E] | None:
        return []


class StructType(FieldType["Struct"]):
    """A nested structure (array elements, mostly)."""

    def __init__(self, schema: MessageSchema):
        self.schema = schema
        self.name = schema.name
        self.min_size = schema.min_size

    def read(self, buf: Buffer, pos: int) -> tuple[Struct, int]:
        return self.schema.read(buf, pos)

    def write(self, out: bytearray, value: object) -> None:
        self.schema.write(out, value)

    def default(self) -> Struct:
        return self.schema.make()


# --- fields, structs, schemas ------------------------------------------------------------


class Field:
    """One named, typed field of a schema (at one version)."""

    __slots__ = ("_fresh", "default", "name", "tag", "type")

    # A schema's fields mix value types (int, str, list, Struct...): which one a field holds
    # is its type's, known when the schema is built, so the list sees ``FieldType[Any]``.
    def __init__(self, name: str, type: FieldType[Any], default: object = _MISSING,
                 tag: int | None = None):
        self.name = name
        self.type = type
        # A tagged field (KIP-482) lives in the tagged-field block under this number, written
        # only when its value is not the default; None: an ordinary field, in wire order.
        self.tag = tag
        self.default = type.default() if default is _MISSING else default
        # Lists and structs must not be shared between messages: make a new one each time.
        self._fresh = default is _MISSING and isinstance(type, (Array, StructType))

    def make_default(self) -> object:
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
    _schema: MessageSchema
    _fields: tuple[str, ...] = ()

    def __new__(cls, schema: MessageSchema, /, **fields: object) -> Struct:
        return schema.make(**fields)

    if TYPE_CHECKING:
        # Fields are the schema's, known at run time only: a type checker sees each as Any,
        # read as an attribute or an item (the slots still refuse a misspelt name when the
        # code runs); a TypedDict of protocol.message_types types a message whole.
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: object) -> None: ...

    @property
    def schema(self) -> MessageSchema:
        """The schema (name and version) this struct was built or decoded with."""
        return self._schema

    def to_dict(self) -> dict[str, object]:
        """Plain nested dicts and lists, for printing, comparing and JSON."""
        return {name: plain(getattr(self, name)) for name in self._fields}

    def items(self) -> list[tuple[str, object]]:
        """(field name, value) pairs in wire order."""
        return [(name, getattr(self, name)) for name in self._fields]

    def __getitem__(self, name: str) -> Any:  # the schema's field: see __getattr__
        if name not in self._fields:
            raise KeyError(name)
        return getattr(self, name)

    def __setitem__(self, name: str, value: object) -> None:
        if name not in self._fields:
            raise KeyError(name)
        setattr(self, name, value)

    def get(self, name: str, default: object = None) -> Any:
        """A field's value, or ``default`` where this version has no such field: as a dict's
        ``get``, so code that reads a request by key takes the broker's decoded dicts and a
        Struct alike."""
        return getattr(self, name, default) if name in self._fields else default

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Struct):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == plain(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.items())
        return f"{self._schema.name}({inner})"


def plain(value: object) -> object:
    """A value as plain data: Structs as dicts (lists of them as lists), buffers as bytes."""
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def untag(tagged: tuple[Field, ...], schema_name: str) -> Callable[[Struct], None]:
    """What a decoder runs on a struct just read: its known tags decoded into their fields
    (each from its own bytes, which must be used up), the unknown ones left as raw bytes."""

    def apply(obj: Struct) -> None:
        raw = obj.tagged_fields
        for f in tagged:
            data = raw.pop(f.tag, None) if raw else None
            if data is None:
                setattr(obj, f.name, f.make_default())
                continue
            setattr(obj, f.name, read_tag(f, f.type.read, data, schema_name))

    return apply


def read_tag(f: Field, read: Callable[[Buffer, int], tuple[object, int]], data: bytes,
             schema_name: str) -> object:
    """A known tagged field's value, read from its own bytes, which it must use up."""
    value, end = read(data, 0)
    if end != len(data):
        raise ProtocolError(
            f"tagged field {f.tag} ({schema_name}.{f.name}) is {len(data)} bytes but "
            f"its value ends at {end}", offset=None, expected=f"{f.type.name} {f.name}")
    return value


def retag(tagged: tuple[Field, ...]) -> Callable[..., dict[int, bytes] | None]:
    """What an encoder runs before the tagged-field block: the raw tags given, with each
    known tagged field that differs from its default encoded under its tag (Kafka writes
    a tagged field only then)."""

    # A structure's default as plain data, made once: the encoder meets a tagged structure
    # at every Fetch answer's partition (three of them), almost always left at its default.
    known: list[tuple[Field, object, dict[str, object] | None]] = [
        (f, f.default, cast("dict[str, object]", plain(f.make_default()))
         if isinstance(f.type, StructType) else None) for f in tagged]

    def apply(raw: dict[int, bytes] | None, *values: object) -> dict[int, bytes] | None:
        tags = dict(raw) if raw else {}
        for (f, default, plain_default), value in zip(known, values, strict=True):
            if value is _MISSING or value is default:
                continue
            if plain_default is None:
                if value == default:
                    continue
            elif _is_default_struct(value, plain_default):
                continue
            out = bytearray()
            f.type.write(out, value)
            tags[f.tag] = bytes(out)  # type: ignore[index]
        return tags

    return apply


def _is_default_struct(value: object, plain_default: dict[str, object]) -> bool:
    """Whether a tagged structure holds only its defaults (a key left out is at its default)."""
    if isinstance(value, dict):
        return all(plain_default.get(key, _MISSING) == v for key, v in value.items())
    return plain(value) == plain_default


def is_fixed(field_type: FieldType) -> bool:
    return field_type.fmt is not None and not isinstance(field_type, Uuid)


class MessageSchema(Protocol):
    """What field types, structs and the compiler use of a schema (``schema.Schema`` has it all)."""

    name: str
    version: int | None
    fields: tuple[Field, ...]
    tagged: tuple[Field, ...]
    known_names: frozenset[str]
    flexible: bool
    min_size: int
    struct_class: type[Struct]
    source: dict[str, str]
    read: Callable[[Buffer, int], tuple[Struct, int]]
    read_dict: Callable[[Buffer, int], tuple[dict[str, object], int]]
    _write_fast: Callable[[bytearray, object], None]

    def make(self, **fields: object) -> Struct: ...

    def write(self, out: bytearray, value: object) -> None: ...

    def write_slow(self, out: bytearray, value: object) -> None: ...

    def _write_slow(self, out: bytearray, value: object) -> None: ...
