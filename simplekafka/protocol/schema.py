"""Declarative message schemas: a field list in, a fast encoder and decoder out.

Kafka describes every request and response as an ordered list of typed fields
per API version (its ``clients/src/main/resources/common/message/*.json``). We
do the same: a :class:`Schema` is a list of :class:`Field` objects, and it
compiles itself into a decoder and an encoder once, when it is built. The
compiler merges runs of fixed-width fields (``int32 int64 int16 ...``) into one
precompiled ``struct.Struct`` so a partition entry costs one ``unpack_from``,
not five.

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
Reader = Callable[[Buffer, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]

_MISSING: Any = object()


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
        # Arrays of one fixed-width type decode with a single unpack_from.
        self._fixed_fmt = element.fmt if isinstance(element, Fixed) else None

    def read(self, buf: Buffer, pos: int) -> tuple[Any, int]:
        start = pos
        if self.compact:
            count, pos = p.read_compact_length(buf, pos, self.nullable, "array")
        else:
            count, pos = p.read_fixed(p.INT32, buf, pos, "int32 array length")
        if count < 0:
            if count == -1 and self.nullable:
                return None, pos
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
        if self._fixed_fmt is not None:
            items = struct.unpack_from(f">{count}{self._fixed_fmt}", buf, pos)
            return list(items), pos + count * element_size
        read = self._read_element
        items = []
        append = items.append
        for _ in range(count):
            item, pos = read(buf, pos)
            append(item)
        return items, pos

    def write(self, out: bytearray, value: Any) -> None:
        if value is None:
            if not self.nullable:
                raise EncodeError(f"null given for non-nullable array {self.name}")
            out += b"\x00" if self.compact else b"\xff\xff\xff\xff"
            return
        if self.compact:
            p.write_unsigned_varint(out, len(value) + 1)
        else:
            out += p.INT32.pack(len(value))
        if self._fixed_fmt is not None:
            out += struct.pack(f">{len(value)}{self._fixed_fmt}", *value)
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
    ``schema.make(topic="t", partition=0)``.
    """

    __slots__ = ("__dict__", "_schema")

    def __init__(self, schema: Schema, /, **fields: Any):
        object.__setattr__(self, "_schema", schema)
        self.__dict__.update(schema._fill(fields))

    @property
    def schema(self) -> Schema:
        """The schema (name and version) this struct was built or decoded with."""
        return self._schema

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists, for printing, comparing and JSON."""
        return {name: _plain(value) for name, value in self.__dict__.items()}

    def __getitem__(self, name: str) -> Any:
        return self.__dict__[name]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Struct):
            return self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == _plain(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
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


def _new_struct(schema: Schema, values: dict[str, Any]) -> Struct:
    obj = object.__new__(Struct)
    object.__setattr__(obj, "_schema", schema)
    obj.__dict__ = values
    return obj


class Schema:
    """An ordered field list for one message (or nested structure) at one version.

    ``flexible`` adds the trailing tagged-field block (decoded into the
    ``tagged_fields`` attribute as ``{tag: raw bytes}``). ``known_names`` lists
    the field names of every version of the message, so ``make`` can accept a
    field that this version simply lacks (it is dropped) while still catching
    typos.
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
        self._readers = self._compile_readers()
        self._writers = self._compile_writers()

    # -- building values ----------------------------------------------------------------

    def make(self, **fields: Any) -> Struct:
        """A Struct of this schema; missing fields take their defaults."""
        return _new_struct(self, self._fill(fields))

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

    def _compile_readers(self) -> list[Callable[[Buffer, int, dict], int]]:
        """One step per run of fixed-width fields, one per variable field."""
        steps: list[Callable[[Buffer, int, dict], int]] = []
        run: list[Field] = []

        def close_run() -> None:
            if run:
                steps.append(_fixed_run_reader(self.name, list(run)))
                run.clear()

        for f in self.fields:
            if f.type.fmt is not None and not isinstance(f.type, Uuid):
                run.append(f)
            else:
                close_run()
                steps.append(_single_reader(f))
        close_run()
        if self.flexible:
            steps.append(_tagged_reader)
        return steps

    def read(self, buf: Buffer, pos: int = 0) -> tuple[Struct, int]:
        """Decode one struct at ``pos``; returns it and the position after it."""
        values: dict[str, Any] = {}
        for step in self._readers:
            pos = step(buf, pos, values)
        return _new_struct(self, values), pos

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

    def _compile_writers(self) -> list[tuple[str, Any, Any]]:
        writers: list[tuple[str, Any, Any]] = []
        run: list[Field] = []

        def close_run() -> None:
            if run:
                writers.append(("fixed", struct.Struct(">" + "".join(f.type.fmt for f in run)),
                                tuple(run)))
                run.clear()

        for f in self.fields:
            if f.type.fmt is not None and not isinstance(f.type, Uuid):
                run.append(f)
            else:
                close_run()
                writers.append(("one", f.type.write, f))
        close_run()
        return writers

    def write(self, out: bytearray, value: Any) -> None:
        """Append the encoding of ``value`` (a Struct, a dict, or any object with attributes)."""
        if isinstance(value, Struct):
            get = value.__dict__.get
        elif isinstance(value, Mapping):
            get = value.get
        else:

            def get(name: str, default: Any, _obj: Any = value) -> Any:
                return getattr(_obj, name, default)

        for kind, writer, detail in self._writers:
            if kind == "fixed":
                values = [get(f.name, f.default) for f in detail]
                try:
                    out += writer.pack(*values)
                except struct.error as exc:
                    raise EncodeError(
                        f"{self.name}: cannot encode {dict(zip([f.name for f in detail], values))}"
                        f" as {[f.type.name for f in detail]}: {exc}"
                    ) from None
            else:
                field_value = get(detail.name, _MISSING)
                if field_value is _MISSING:
                    field_value = detail.make_default()
                try:
                    writer(out, field_value)
                except EncodeError as exc:
                    if str(exc).startswith(self.name + "."):
                        raise
                    raise EncodeError(f"{self.name}.{detail.name}: {exc}") from None
                except (struct.error, TypeError, AttributeError, ValueError) as exc:
                    raise EncodeError(
                        f"{self.name}.{detail.name}: cannot encode {field_value!r} as "
                        f"{detail.type.name}: {exc}"
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


def _fixed_run_reader(schema_name: str, run: list[Field]) -> Callable[[Buffer, int, dict], int]:
    compiled = struct.Struct(">" + "".join(f.type.fmt for f in run))
    unpack_from = compiled.unpack_from
    size = compiled.size
    names = tuple(f.name for f in run)
    types = tuple(f.type for f in run)

    def read_fixed_run(buf: Buffer, pos: int, values: dict) -> int:
        end = pos + size
        if end > len(buf):
            # Find the first field that does not fit, for a precise message.
            at = pos
            for name, type_ in zip(names, types):
                if at + type_.min_size > len(buf):
                    raise ProtocolError(
                        f"expected {type_.name} '{name}' of {schema_name} at offset {at}, but "
                        f"only {max(len(buf) - at, 0)} bytes remain",
                        offset=min(at, len(buf)) if at <= len(buf) else len(buf),
                        expected=f"{type_.name} {name}",
                    )
                at += type_.min_size
        values.update(zip(names, unpack_from(buf, pos)))
        return end

    return read_fixed_run


def _single_reader(field: Field) -> Callable[[Buffer, int, dict], int]:
    read = field.type.read
    name = field.name

    def read_one(buf: Buffer, pos: int, values: dict) -> int:
        values[name], pos = read(buf, pos)
        return pos

    return read_one


def _tagged_reader(buf: Buffer, pos: int, values: dict) -> int:
    values["tagged_fields"], pos = p.read_tagged_fields(buf, pos)
    return pos
