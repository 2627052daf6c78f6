"""The codec's compiler: a Schema's field list turned into Python functions, once.

:mod:`simplekafka.protocol.schema` interprets a field list (``read_slow``,
``write_slow``: the reference, and what the dissector walks). This module
(which knows only the field model, :mod:`simplekafka.protocol.fields`, so
that ``Schema`` can import it without an import circle)
writes the fast paths: for each schema it generates the source of one read
and one write function and ``exec``s it. Runs of fixed-width fields (``int32
int64 int16 ...``) become one precompiled ``struct.Struct`` call, so a
partition entry costs one ``unpack_from``, not five; nested structures are
inlined, so an array of them is a plain loop with no call per element. The
generated text is kept in ``schema.source``, to read; the tests check that
compiled and interpreted paths agree for every API and version.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import cast

from simplekafka.protocol import primitives as p
from simplekafka.protocol.errors import ProtocolError
from simplekafka.protocol.fields import (
    SMALL_ARRAY,
    Array,
    Buffer,
    Bytes,
    EncodeError,
    Field,
    FieldType,
    MessageSchema,
    String,
    Struct,
    StructType,
    Uuid,
    is_fixed,
    plain,
    read_tag,
    retag,
    untag,
)


def compile_read(schema: MessageSchema) -> Callable[[Buffer, int], tuple[Struct, int]]:
    """The schema's decoder: ``read(buf, pos) -> (struct, new_pos)``."""
    return cast("Callable[[Buffer, int], tuple[Struct, int]]", _compile_read(schema, False))


def compile_read_dict(schema: MessageSchema
                      ) -> Callable[[Buffer, int], tuple[dict[str, object], int]]:
    """The same decoder building plain dicts (nested ones too) instead of Structs.

    What the broker decodes requests with: its handlers take each request as its
    TypedDict and read it by key, which a dict answers in one C-level lookup where a
    Struct's ``__getitem__`` is a Python call (issue 27: the typed seam, no slower).
    """
    return cast("Callable[[Buffer, int], tuple[dict[str, object], int]]",
                _compile_read(schema, True))


def _compile_read(schema: MessageSchema, as_dict: bool) -> object:
    ns: dict[str, object] = {
        "_new": object.__new__,
        "_len": len,
        "_range": range,
        "_read_tags": p.read_tagged_fields,
        "_int32": p.INT32.unpack_from,
        "_int16": p.INT16.unpack_from,
        "_str": str,
        "_bytes": bytes,
        "_list": list,
    }
    name = "read_dict" if as_dict else "read"
    # The buffer's length is read once: every inlined check compares against it.
    lines = [f"def {name}(buf, pos):", "    blen = _len(buf)"]
    _emit_read(schema, ns, lines, "    ", "obj", as_dict)
    lines.append("    return obj, pos")
    return _define(schema, name, lines, ns)

def _define(schema: MessageSchema, name: str, lines: list[str], ns: dict[str, object]) -> object:
    """Compile the generated function, keeping its text in ``schema.source``; what it is,
    the caller knows (the generated text is not type-checked)."""
    source = "\n".join(lines) + "\n"
    schema.source[name] = source
    exec(compile(source, f"<{schema.name} v{schema.version} {name}>", "exec"), ns)
    return ns[name]


def compile_write(schema: MessageSchema) -> Callable[[bytearray, object], None]:
    """The schema's encoder: ``write(out, value)`` for a Struct, a dict or any object."""
    ns: dict[str, object] = {
        "_getattr": getattr,
        "_dict": dict,
        "_isinstance": isinstance,
        "_Mapping": Mapping,
        "_write_tags": p.write_tagged_fields,
        "_str": str,
        "_bytes": bytes,
        "_int16": p.INT16.pack,
        "_int32": p.INT32.pack,
        "_uvarint": p.write_unsigned_varint,
        "_encode_error": EncodeError,
    }
    lines = [
        "def write(out, value):",
        "    if value is None:",
        f"        raise _encode_error('None given for a {schema.name}')",
        "    if type(value) is _dict or _isinstance(value, _Mapping):",
        "        get = value.get",
    ]
    _emit_write(schema, ns, lines, "get({name!r}, {default})")
    lines.append("    else:")
    _emit_write(schema, ns, lines, "_getattr(value, {name!r}, {default})")
    return cast("Callable[[bytearray, object], None]", _define(schema, "write", lines, ns))

def _emit_write(schema: MessageSchema, ns: dict[str, object], lines: list[str], get: str) -> None:
    """Emit the body that writes every field of ``schema``, reading them with ``get``."""
    ind = "        "
    for run, f in _fixed_runs(schema.fields):
        if run:  # one struct.pack for the whole run
            i = len(ns)
            ns[f"_pack{i}"] = _run_struct(run).pack
            args = []
            for k, fixed in enumerate(run):
                ns[f"_d{i}_{k}"] = fixed.default
                args.append(get.format(name=fixed.name, default=f"_d{i}_{k}"))
            lines.append(f"{ind}out += _pack{i}({', '.join(args)})")
        if f is None:
            break
        i = len(ns)
        ns[f"_d{i}"] = f.default
        t = f.type
        value = get.format(name=f.name, default=f"_d{i}")
        if isinstance(t, Array) and isinstance(t.element, StructType):
            ns[f"_write{i}"] = t.write  # handles null
            ns[f"_elem{i}"] = t.element.schema._write_fast
            # null: written inline where the array may be null, else the type's writer
            # (which names the error)
            null = f"_write{i}(out, x)"
            if t.nullable:
                null = "out.append(0)" if t.compact else "out += b'\\xff\\xff\\xff\\xff'"
            lines += [
                f"{ind}x = {value}",
                f"{ind}if x is None:",
                f"{ind}    {null}",
                f"{ind}else:",
            ]
            if t.compact:  # the count plus one as an unsigned varint: one byte under 127
                lines += [
                    f"{ind}    n = len(x) + 1",
                    f"{ind}    if n < 0x80:",
                    f"{ind}        out.append(n)",
                    f"{ind}    else:",
                    f"{ind}        _uvarint(out, n)",
                ]
            else:
                ns[f"_count{i}"] = p.INT32.pack
                lines.append(f"{ind}    out += _count{i}(len(x))")
            lines += [
                f"{ind}    for item in x:",
                f"{ind}        _elem{i}(out, item)",
            ]
        elif isinstance(t, String):
            # A str whose UTF-8 surely fits its length field inline (at most 4 bytes a
            # character); null, a long or a wrong value go through the type's writer.
            ns[f"_write{i}"] = t.write
            limit = 31 if t.compact else 8191
            lines += [
                f"{ind}x = {value}",
                f"{ind}if x.__class__ is _str and len(x) <= {limit}:",
                f"{ind}    raw = x.encode()",
            ]
            if t.compact:
                lines += [f"{ind}    out.append(len(raw) + 1)"]
            else:
                lines += [f"{ind}    out += _int16(len(raw))"]
            lines += [f"{ind}    out += raw"]
            if t.nullable:
                null = "out.append(0)" if t.compact else "out += b'\\xff\\xff'"
                lines += [f"{ind}elif x is None:", f"{ind}    {null}"]
            lines += [f"{ind}else:", f"{ind}    _write{i}(out, x)"]
        elif isinstance(t, Bytes):
            # Bytes and record sets held as bytes inline; null, a file region (the broker's
            # zero-copy reads) or a wrong value go through the type's writer.
            ns[f"_write{i}"] = t.write
            lines += [f"{ind}x = {value}", f"{ind}if x.__class__ is _bytes:"]
            if t.compact:  # the length plus one as an unsigned varint: inline up to 16 KB
                lines += [
                    f"{ind}    n = len(x) + 1",
                    f"{ind}    if n < 0x80:",
                    f"{ind}        out.append(n)",
                    f"{ind}    elif n < 0x4000:",
                    f"{ind}        out.append((n & 0x7F) | 0x80)",
                    f"{ind}        out.append(n >> 7)",
                    f"{ind}    else:",
                    f"{ind}        _uvarint(out, n)",
                ]
            else:
                lines.append(f"{ind}    out += _int32(len(x))")
            lines += [
                f"{ind}    out += x",
                f"{ind}else:",
                f"{ind}    _write{i}(out, x)",
            ]
        elif isinstance(t, Uuid):  # 16 bytes as given; anything else: the type's error
            ns[f"_write{i}"] = t.write
            lines += [
                f"{ind}x = {value}",
                f"{ind}if x.__class__ is _bytes and len(x) == 16:",
                f"{ind}    out += x",
                f"{ind}else:",
                f"{ind}    _write{i}(out, x)",
            ]
        else:
            ns[f"_write{i}"] = t.write
            lines.append(f"{ind}_write{i}(out, {value})")
    if schema.flexible:
        tags = get.format(name="tagged_fields", default="None")
        if schema.tagged:
            # Each known tagged field read once; all left out (the usual case: a Fetch
            # answer's partition rarely diverges) is one zero byte, inline.
            i = len(ns)
            ns[f"_retag{i}"] = retag(schema.tagged)
            lines.append(f"{ind}x = {tags}")
            values, untouched = [], ["not x"]
            for k, tagged in enumerate(schema.tagged):
                ns[f"_td{i}_{k}"] = tagged.default
                lines.append(f"{ind}t{k} = " + get.format(name=tagged.name,
                                                         default=f"_td{i}_{k}"))
                values.append(f"t{k}")
                untouched.append(f"t{k} is _td{i}_{k}")
            lines += [f"{ind}if {' and '.join(untouched)}:", f"{ind}    out.append(0)",
                      f"{ind}else:",
                      f"{ind}    _write_tags(out, _retag{i}(x, {', '.join(values)}))"]
        else:  # no tagged fields, the usual case: one zero byte, inline
            lines += [f"{ind}x = {tags}", f"{ind}if not x:", f"{ind}    out.append(0)",
                      f"{ind}else:", f"{ind}    _write_tags(out, x)"]
    lines.append(f"{ind}pass")


def _emit_read(
    schema: MessageSchema, ns: dict[str, object], lines: list[str], ind: str, target: str,
    as_dict: bool = False,
) -> None:
    """Emit code that reads one ``schema`` struct at ``pos`` into the variable ``target``.

    Nested structures are inlined (no call per array element), and runs of
    fixed-width fields are unpacked straight into the new object's slots.
    """
    def slot(name: str) -> str:  # where a field's value goes: the dict's key, or the slot
        return f"{target}[{name!r}]" if as_dict else f"{target}.{name}"

    if as_dict:
        lines.append(f"{ind}{target} = {{}}")
    else:
        n = len(ns)
        ns[f"_cls{n}"] = schema.struct_class
        lines.append(f"{ind}{target} = _new(_cls{n})")
    for run, f in _fixed_runs(schema.fields):
        if run:  # one unpack_from for the whole run, straight into the slots
            i = len(ns)
            compiled = _run_struct(run)
            ns[f"_unpack{i}"] = compiled.unpack_from
            ns[f"_short{i}"] = _short_run_error(schema.name, run)
            attrs = ", ".join(slot(fixed.name) for fixed in run)
            lines.append(f"{ind}if pos + {compiled.size} > blen: _short{i}(buf, pos)")
            lines.append(f"{ind}{attrs}, = _unpack{i}(buf, pos)")
            lines.append(f"{ind}pos += {compiled.size}")
        if f is None:
            break
        i = len(ns)
        t = f.type
        if isinstance(t, Array) and isinstance(t.element, StructType):
            ns[f"_count{i}"] = t.read_count
            items, element = f"items{i}", f"element{i}"
            if t.compact:  # a one-byte count inline (under 127 elements); else the reader
                lines += [
                    f"{ind}n = buf[pos] if pos < blen else 0x80",
                    f"{ind}if 0 < n < 0x80 and pos + 1 + (n - 1) * {t.element.min_size} <= blen:",
                    f"{ind}    n -= 1",
                    f"{ind}    pos += 1",
                    f"{ind}else:",
                    f"{ind}    n, pos = _count{i}(buf, pos)",
                ]
            else:  # the count read inline; null or an impossible count: the generic reader
                lines += [
                    f"{ind}n = _int32(buf, pos)[0] if pos + 4 <= blen else -2",
                    f"{ind}if 0 <= n and pos + 4 + n * {t.element.min_size} <= blen:",
                    f"{ind}    pos += 4",
                    f"{ind}else:",
                    f"{ind}    n, pos = _count{i}(buf, pos)",
                ]
            lines += [
                f"{ind}if n < 0:",
                f"{ind}    {slot(f.name)} = None",
                f"{ind}else:",
                f"{ind}    {items} = []",
                f"{ind}    for _ in _range(n):",
            ]
            _emit_read(t.element.schema, ns, lines, ind + "        ", element, as_dict)
            lines += [
                f"{ind}        {items}.append({element})",
                f"{ind}    {slot(f.name)} = {items}",
            ]
        elif isinstance(t, Array) and t._fixed_fmt is not None and not t.compact:
            # Inline the common case (a short, non-null list of ints); anything else,
            # errors included, goes through the generic reader.
            ns[f"_read{i}"] = t.read
            ns[f"_unpackers{i}"] = t._unpackers
            size = t.element.min_size
            lines += [
                f"{ind}n = _int32(buf, pos)[0] if pos + 4 <= blen else -2",
                f"{ind}if 0 <= n < {SMALL_ARRAY} and pos + 4 + n * {size} <= blen:",
                f"{ind}    {slot(f.name)} = _list(_unpackers{i}[n](buf, pos + 4))",
                f"{ind}    pos += 4 + n * {size}",
                f"{ind}else:",
                f"{ind}    {slot(f.name)}, pos = _read{i}(buf, pos)",
            ]
        elif isinstance(t, Uuid):  # 16 bytes inline; a short buffer: the type's error
            ns[f"_read{i}"] = t.read
            lines += [
                f"{ind}if pos + 16 > blen: _read{i}(buf, pos)",
                f"{ind}{slot(f.name)} = _bytes(buf[pos:pos + 16])",
                f"{ind}pos += 16",
            ]
        elif isinstance(t, String | Bytes):
            # Inline the common cases (a whole value, null where nullable; for a compact
            # one, a one-byte length); a short buffer, bad UTF-8 or a longer compact length
            # go through the type's reader, which reads them or names the error.
            ns[f"_read{i}"] = t.read
            if not t.compact:
                width, unpack = (2, "_int16") if isinstance(t, String) else (4, "_int32")
                header = (f"{unpack}(buf, pos)[0] if pos + {width} <= blen else -2",
                          f"0 <= n and pos + {width} + n <= blen",
                          f"pos + {width}", f"pos + {width} + n", (-1, width))
            elif isinstance(t, String):
                header = ("buf[pos] if pos < blen else 0x80", "0 < n < 0x80 and pos + n <= blen",
                          "pos + 1", "pos + n", (0, 1))
            else:  # compact bytes (record sets): a one- or two-byte length inline
                into = slot(f.name)
                lines += [
                    f"{ind}n = buf[pos] if pos < blen else 0",
                    f"{ind}if 0 < n < 0x80 and pos + n <= blen:",
                    f"{ind}    {into} = _bytes(buf[pos + 1:pos + n])",
                    f"{ind}    pos += n",
                    f"{ind}elif n >= 0x80 and pos + 1 < blen and buf[pos + 1] < 0x80 and "
                    f"0 < ((n & 0x7F) | (buf[pos + 1] << 7)) <= blen - pos - 1:",
                    f"{ind}    n = ((n & 0x7F) | (buf[pos + 1] << 7)) + pos + 1",
                    f"{ind}    {into} = _bytes(buf[pos + 2:n])",
                    f"{ind}    pos = n",
                    f"{ind}else:",
                    f"{ind}    {into}, pos = _read{i}(buf, pos)",
                ]
                continue
            _emit_sized(lines, ind, slot(f.name), f"_read{i}", *header[:4],
                        text=isinstance(t, String), null=header[4] if t.nullable else None)
        else:
            ns[f"_read{i}"] = dict_reader(t) if as_dict else t.read
            lines.append(f"{ind}{slot(f.name)}, pos = _read{i}(buf, pos)")
    if schema.flexible:
        lines += [  # no tagged fields (one zero byte) inline, each message its own dict
            f"{ind}if pos < blen and buf[pos] == 0:",
            f"{ind}    {slot('tagged_fields')} = {{}}",
            f"{ind}    pos += 1",
        ]
        if schema.tagged and as_dict:
            # ...and the known tagged fields' defaults set inline: a number, string or
            # null shared, a structure each message's own copy (what untag_dict gives)
            i = len(ns)
            for k, tagged in enumerate(schema.tagged):
                default = plain(tagged.default)
                empties = _empty_containers(default)
                if empties is not None:  # a flat structure (its own empty tag dict, say):
                    # a dict display, no call (replica_state on every Fetch v15+ request)
                    ns[f"_tdefault{i}_{k}"] = default
                    fresh = [f"{key!r}: {'{}' if kind is dict else '[]'}" for key, kind in empties]
                    value = "{" + ", ".join([f"**_tdefault{i}_{k}", *fresh]) + "}"
                elif isinstance(default, dict | list):
                    ns[f"_tfresh{i}_{k}"] = _fresh_maker(default)
                    value = f"_tfresh{i}_{k}()"
                else:
                    ns[f"_tdefault{i}_{k}"] = default
                    value = f"_tdefault{i}_{k}"
                lines.append(f"{ind}    {slot(tagged.name)} = {value}")
        lines += [
            f"{ind}else:",
            f"{ind}    {slot('tagged_fields')}, pos = _read_tags(buf, pos)",
        ]
        if schema.tagged:
            i = len(ns)
            ns[f"_untag{i}"] = untag_dict(schema.tagged, schema.name) if as_dict \
                else untag(schema.tagged, schema.name)
            lines.append(f"{ind}    _untag{i}({target})" if as_dict
                         else f"{ind}_untag{i}({target})")


def _emit_sized(lines: list[str], ind: str, into: str, reader: str, length: str, whole: str,
                start: str, end: str, text: bool, null: tuple[int, int] | None) -> None:
    """A length-prefixed value read inline: ``length`` reads n, ``whole`` says the value is
    all there, ``start``/``end`` are its bytes; ``null`` is (the n of a null, its size)."""
    value = f"_str(buf[{start}:{end}], 'utf-8')" if text else f"_bytes(buf[{start}:{end}])"
    lines += [f"{ind}n = {length}", f"{ind}if {whole}:"]
    if text:
        lines += [f"{ind}    try:", f"{ind}        {into} = {value}",
                  f"{ind}    except UnicodeDecodeError:", f"{ind}        {reader}(buf, pos)"]
    else:
        lines.append(f"{ind}    {into} = {value}")
    lines.append(f"{ind}    pos = {end}")
    if null is not None:
        lines += [f"{ind}elif n == {null[0]}:", f"{ind}    {into} = None",
                  f"{ind}    pos += {null[1]}"]
    lines += [f"{ind}else:", f"{ind}    {into}, pos = {reader}(buf, pos)"]


def dict_reader(field_type: FieldType[object]) -> Callable[[Buffer, int], tuple[object, int]]:
    """How a field reads in dict mode: a nested structure, alone or in an array, as dicts."""
    if isinstance(field_type, StructType):
        schema = field_type.schema
        return lambda buf, pos: schema.read_dict(buf, pos)
    if isinstance(field_type, Array) and isinstance(field_type.element, StructType):
        array, element = field_type, field_type.element.schema

        def read(buf: Buffer, pos: int) -> tuple[object, int]:
            count, pos = array.read_count(buf, pos)
            if count < 0:
                return None, pos
            items = []
            for _ in range(count):
                item, pos = element.read_dict(buf, pos)
                items.append(item)
            return items, pos

        return read
    return field_type.read


def untag_dict(tagged: tuple[Field, ...], schema_name: str
               ) -> Callable[[dict[str, object]], None]:
    """``untag`` for a dict just read: its known tags decoded (nested structures as dicts),
    a missing one given its default as plain data, the unknown ones left as raw bytes."""
    readers = [(f, dict_reader(f.type), _fresh_maker(plain(f.default))) for f in tagged]

    def apply(obj: dict[str, object]) -> None:
        raw = cast("dict[int, bytes] | None", obj["tagged_fields"])
        for f, read, fresh in readers:
            data = raw.pop(f.tag, None) if raw and f.tag is not None else None
            if data is None:
                obj[f.name] = fresh()
                continue
            obj[f.name] = read_tag(f, read, data, schema_name)

    return apply


def _empty_containers(value: object) -> list[tuple[str, type]] | None:
    """For a dict whose only containers are empty dicts or lists: those keys and their types
    (a copy is the dict with each made anew); None for anything else."""
    if not isinstance(value, dict):
        return None
    inner = [(key, type(v)) for key, v in value.items() if isinstance(v, dict | list)]
    if any(value[key] for key, _ in inner) or any(kind not in (dict, list) for _, kind in inner):
        return None
    return inner


def _fresh_maker(value: object) -> Callable[[], object]:
    """What gives a message its own copy of a tagged field's default: a flat structure's
    is a dict copy (Fetch answers carry three per partition), a nested one is copied all
    the way down, a number or string is shared."""
    empties = _empty_containers(value)
    if empties is not None:
        flat = cast("dict[str, object]", value)
        if not empties:
            return flat.copy

        def copied() -> dict[str, object]:
            fresh = flat.copy()
            for key, kind in empties:  # e.g. its tagged_fields
                fresh[key] = kind()
            return fresh

        return copied
    if isinstance(value, dict | list):
        return lambda: _fresh(value)
    return lambda: value


def _fresh(value: object) -> object:
    """A copy of a plain default that no other message shares (its dicts and lists new)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def _fixed_runs(fields: Iterable[Field]) -> Iterator[tuple[list[Field], Field | None]]:
    """Each field that is not fixed-width, with the run of fixed-width fields before it.

    The last pair has ``None`` for the field: the run that ends the schema.
    """
    run: list[Field] = []
    for f in fields:
        if is_fixed(f.type):
            run.append(f)
        else:
            yield run, f
            run = []
    yield run, None


def _run_struct(run: list[Field]) -> struct.Struct:
    """One big-endian ``struct.Struct`` for a run of fixed-width fields."""
    return struct.Struct(">" + "".join(f.type.fmt or "" for f in run))


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
