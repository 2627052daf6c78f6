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

_MISSING: Any = object()
_SMALL = 17  # arrays of fixed-width values shorter than this use precompiled structs


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
                struct.Struct(f">{count_fmt}{n}{self._fixed_fmt}").pack for n in range(_SMALL)
            ]
            self._unpackers = [
                struct.Struct(f">{n}{self._fixed_fmt}").unpack_from for n in range(_SMALL)
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
            if count < _SMALL:
                items = self._unpackers[count](buf, pos)
            else:
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
        count = len(value)
        if self._fixed_fmt is not None and count < _SMALL:
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


def _is_fixed(field_type: FieldType) -> bool:
    return field_type.fmt is not None and not isinstance(field_type, Uuid)


class Schema:
    """An ordered field list for one message (or nested structure) at one version.

    ``flexible`` adds the trailing tagged-field block (decoded into the
    ``tagged_fields`` attribute as ``{tag: raw bytes}``). ``known_names`` lists
    the field names of every version of the message, so ``make`` can accept a
    field that this version simply lacks (it is dropped) while still catching
    typos.

    The schema compiles itself into two Python functions, one to read
    (``schema.read(buf, pos) -> (struct, new_pos)``) and one to write, generated
    from the field list (``schema.source`` holds their text): runs of
    fixed-width fields become one ``struct`` call, arrays of structures become
    plain loops. ``read_slow``/``write_slow`` interpret the field list instead;
    they are the reference the compiled code is tested against, and they find
    the exact field when encoding fails.
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
        self.source: dict[str, str] = {}
        self.read: Callable[[Buffer, int], tuple[Struct, int]] = self._compile_read()
        self._write_fast: Callable[[bytearray, Any], None] = self._compile_write()

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

    def _compile_read(self) -> Callable[[Buffer, int], tuple[Struct, int]]:
        ns: dict[str, Any] = {
            "_new": object.__new__,
            "_len": len,
            "_range": range,
            "_read_tags": p.read_tagged_fields,
            "_int32": p.INT32.unpack_from,
            "_list": list,
        }
        lines = ["def read(buf, pos):"]
        _emit_read(self, ns, lines, "    ", "obj")
        lines.append("    return obj, pos")
        return self._define("read", lines, ns)

    def _define(self, name: str, lines: list[str], ns: dict[str, Any]) -> Any:
        source = "\n".join(lines) + "\n"
        self.source[name] = source
        exec(compile(source, f"<{self.name} v{self.version} {name}>", "exec"), ns)
        return ns[name]

    def read_slow(self, buf: Buffer, pos: int = 0) -> tuple[Struct, int]:
        """Decode one struct field by field, without the compiled code (reference path)."""
        values: dict[str, Any] = {}
        for f in self.fields:
            if isinstance(f.type, Array) and isinstance(f.type.element, StructType):
                count, pos = f.type.read_count(buf, pos)
                if count < 0:
                    values[f.name] = None
                    continue
                items = []
                for _ in range(count):
                    item, pos = f.type.element.schema.read_slow(buf, pos)
                    items.append(item)
                values[f.name] = items
            else:
                values[f.name], pos = f.type.read(buf, pos)
        if self.flexible:
            values["tagged_fields"], pos = p.read_tagged_fields(buf, pos)
        obj = object.__new__(self.struct_class)
        for name, value in values.items():
            setattr(obj, name, value)
        return obj, pos

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

    def _compile_write(self) -> Callable[[bytearray, Any], None]:
        ns: dict[str, Any] = {
            "_getattr": getattr,
            "_dict": dict,
            "_isinstance": isinstance,
            "_Mapping": Mapping,
            "_write_tags": p.write_tagged_fields,
            "_encode_error": EncodeError,
        }
        lines = [
            "def write(out, value):",
            "    if value is None:",
            f"        raise _encode_error('None given for a {self.name}')",
            "    if type(value) is _dict or _isinstance(value, _Mapping):",
            "        get = value.get",
        ]
        self._emit_write(ns, lines, "get({name!r}, {default})")
        lines.append("    else:")
        self._emit_write(ns, lines, "_getattr(value, {name!r}, {default})")
        return self._define("write", lines, ns)

    def _emit_write(self, ns: dict[str, Any], lines: list[str], get: str) -> None:
        ind = "        "
        run: list[Field] = []

        def close_run() -> None:
            if not run:
                return
            i = len(ns)
            ns[f"_pack{i}"] = struct.Struct(">" + "".join(f.type.fmt for f in run)).pack
            args = []
            for k, f in enumerate(run):
                ns[f"_d{i}_{k}"] = f.default
                args.append(get.format(name=f.name, default=f"_d{i}_{k}"))
            lines.append(f"{ind}out += _pack{i}({', '.join(args)})")
            run.clear()

        for f in self.fields:
            if _is_fixed(f.type):
                run.append(f)
                continue
            close_run()
            i = len(ns)
            ns[f"_d{i}"] = f.default
            t = f.type
            value = get.format(name=f.name, default=f"_d{i}")
            if isinstance(t, Array) and isinstance(t.element, StructType) and not t.compact:
                ns[f"_write{i}"] = t.write  # handles null
                ns[f"_elem{i}"] = t.element.schema._write_fast
                ns[f"_count{i}"] = p.INT32.pack
                lines += [
                    f"{ind}x = {value}",
                    f"{ind}if x is None:",
                    f"{ind}    _write{i}(out, x)",
                    f"{ind}else:",
                    f"{ind}    out += _count{i}(len(x))",
                    f"{ind}    for item in x:",
                    f"{ind}        _elem{i}(out, item)",
                ]
            else:
                ns[f"_write{i}"] = t.write
                lines.append(f"{ind}_write{i}(out, {value})")
        close_run()
        if self.flexible:
            tags = get.format(name="tagged_fields", default="None")
            lines.append(f"{ind}_write_tags(out, {tags})")
        lines.append(f"{ind}pass")

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
                elif _is_fixed(f.type):
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


def _emit_read(
    schema: Schema, ns: dict[str, Any], lines: list[str], ind: str, target: str
) -> None:
    """Emit code that reads one ``schema`` struct at ``pos`` into the variable ``target``.

    Nested structures are inlined (no call per array element), and runs of
    fixed-width fields are unpacked straight into the new object's slots.
    """
    n = len(ns)
    ns[f"_cls{n}"] = schema.struct_class
    lines.append(f"{ind}{target} = _new(_cls{n})")
    run: list[Field] = []

    def close_run() -> None:
        if not run:
            return
        i = len(ns)
        compiled = struct.Struct(">" + "".join(f.type.fmt for f in run))
        ns[f"_unpack{i}"] = compiled.unpack_from
        ns[f"_short{i}"] = _short_run_error(schema.name, list(run))
        attrs = ", ".join(f"{target}.{f.name}" for f in run)
        lines.append(f"{ind}if pos + {compiled.size} > _len(buf): _short{i}(buf, pos)")
        lines.append(f"{ind}{attrs}, = _unpack{i}(buf, pos)")
        lines.append(f"{ind}pos += {compiled.size}")
        run.clear()

    for f in schema.fields:
        if _is_fixed(f.type):
            run.append(f)
            continue
        close_run()
        i = len(ns)
        t = f.type
        if isinstance(t, Array) and isinstance(t.element, StructType):
            ns[f"_count{i}"] = t.read_count
            items, element = f"items{i}", f"element{i}"
            lines += [
                f"{ind}n, pos = _count{i}(buf, pos)",
                f"{ind}if n < 0:",
                f"{ind}    {target}.{f.name} = None",
                f"{ind}else:",
                f"{ind}    {items} = []",
                f"{ind}    for _ in _range(n):",
            ]
            _emit_read(t.element.schema, ns, lines, ind + "        ", element)
            lines += [
                f"{ind}        {items}.append({element})",
                f"{ind}    {target}.{f.name} = {items}",
            ]
        elif isinstance(t, Array) and t._fixed_fmt is not None and not t.compact:
            # Inline the common case (a short, non-null list of ints); anything else,
            # errors included, goes through the generic reader.
            ns[f"_read{i}"] = t.read
            ns[f"_unpackers{i}"] = t._unpackers
            size = t.element.min_size
            lines += [
                f"{ind}n = _int32(buf, pos)[0] if pos + 4 <= _len(buf) else -2",
                f"{ind}if 0 <= n < {_SMALL} and pos + 4 + n * {size} <= _len(buf):",
                f"{ind}    {target}.{f.name} = _list(_unpackers{i}[n](buf, pos + 4))",
                f"{ind}    pos += 4 + n * {size}",
                f"{ind}else:",
                f"{ind}    {target}.{f.name}, pos = _read{i}(buf, pos)",
            ]
        else:
            ns[f"_read{i}"] = t.read
            lines.append(f"{ind}{target}.{f.name}, pos = _read{i}(buf, pos)")
    close_run()
    if schema.flexible:
        lines.append(f"{ind}{target}.tagged_fields, pos = _read_tags(buf, pos)")


def _short_run_error(schema_name: str, run: list[Field]) -> Callable[[Buffer, int], None]:
    """Raise a precise error for a run of fixed-width fields that the buffer cuts short."""

    def raise_short(buf: Buffer, pos: int) -> None:
        at = pos
        for f in run:
            if at + f.type.min_size > len(buf):
                raise ProtocolError(
                    f"expected {f.type.name} '{f.name}' of {schema_name} at offset {at}, but "
                    f"only {max(len(buf) - at, 0)} bytes remain",
                    offset=min(at, len(buf)),
                    expected=f"{f.type.name} {f.name}",
                )
            at += f.type.min_size

    return raise_short
