"""The learner's microscope: a frame taken apart into a tree of named byte ranges.

``dissect_frame`` walks the same schemas the codec uses, but slowly and
carefully, recording for every field its name, byte offset, length, raw bytes
and value. Record sets are opened up too: each RecordBatch header field, the
attribute bits (decoded with ``bitstring``), and every record inside, after
decompression when the batch is compressed.

When the bytes stop making sense, the tree built so far is kept and the error
says which byte is wrong and what was expected there; ``render`` draws a hex
dump with a caret under that byte, the way CodeCrafters' tester does.

Sans-I/O like the rest of ``simplekafka.protocol``: bytes in, a tree out.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

import bitstring

from simplekafka.protocol import primitives as p
from simplekafka.protocol.acls import AclOperation, AclPermissionType, PatternType
from simplekafka.protocol.api import ApiKey, known_versions, request_schema, response_schema
from simplekafka.protocol.batch_header import (
    ATTR_CONTROL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    batch_spans,
    crc32c,
)
from simplekafka.protocol.compression import Compression, decompress
from simplekafka.protocol.errors import ErrorCode, ProtocolError
from simplekafka.protocol.framing import DEFAULT_MAX_LENGTH
from simplekafka.protocol.legacy_records import fix_lz4_v0, is_message_set
from simplekafka.protocol.messages import request_header_version, response_header_version
from simplekafka.protocol.schema import Array, FieldType, Records, Schema, SchemaVisitor

Buffer = bytes | bytearray | memoryview


@dataclass
class Node:
    """One field: where it sits, how long it is, what it means."""

    name: str
    offset: int
    length: int
    type: str
    value: object = None  # what the bytes decode to (a number, text, bytes) or a summary
    children: list[Node] = field(default_factory=list)
    note: str = ""
    space: str = ""  # "" for the frame's own bytes, "decompressed" inside a compressed batch

    def child(self, name: str) -> Node:
        """The direct child called ``name`` (one the walker itself just made)."""
        found = next((c for c in self.children if c.name == name), None)
        if found is None:
            raise KeyError(f"{self.name} has no field {name!r}")
        return found

    def find(self, dotted: str) -> Node | None:
        """The descendant at a dotted path such as ``"topics.0.name"``."""
        node: Node | None = self
        for part in dotted.split("."):
            if node is None:
                return None
            node = next((c for c in node.children if c.name == part), None)
        return node


@dataclass
class Dissection:
    """The result of taking a frame apart, complete or up to the first bad byte."""

    data: bytes
    root: Node
    summary: str = ""
    error: ProtocolError | None = None
    decompressed: dict[str, bytes] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def find(self, dotted: str) -> Node | None:
        return self.root.find(dotted)


class _Walker:
    """Reads fields from ``data`` and hangs a Node for each on the current parent."""

    def __init__(self, data: bytes, space: str = "", buffers: dict[str, bytes] | None = None):
        self.data = data
        self.space = space
        self.buffers = {} if buffers is None else buffers  # decompressed data, by space name
        self.parents: dict[int, Node] = {}  # id(child) -> parent, for error paths

    def leaf(self, parent: Node, name: str, type_name: str, reader, pos: int, **kw) -> tuple:
        try:
            value, end = reader(self.data, pos, **kw) if kw else reader(self.data, pos)
        except ProtocolError as exc:
            raise self.named(exc, parent, name, type_name) from None
        parent.children.append(Node(name, pos, end - pos, type_name, value, space=self.space))
        return value, end

    def struct(self, parent: Node, schema: Schema, pos: int) -> int:
        """Walk ``schema`` with the codec's interpreter, hanging its fields on ``parent``."""
        _, end = schema.read_slow(self.data, pos, _TreeBuilder(self, parent))
        return end

    def named(self, exc: ProtocolError, parent: Node, name: str, type_name: str) -> ProtocolError:
        """The same error, saying which field (by its path in the tree) it happened in."""
        if getattr(exc, "field_path", None):
            return exc
        path = ".".join([*self.path(parent), name])
        named = ProtocolError(
            f"{path} ({type_name}): {exc}",
            offset=exc.offset,
            expected=f"{exc.expected or type_name} for {path}",
        )
        named.field_path = path  # type: ignore[attr-defined]
        return named

    def path(self, node: Node) -> list[str]:
        """Names from the top of the tree down to ``node``."""
        names: list[str] = []
        current: Node | None = node
        while current is not None and current.name != "frame":
            names.append(current.name)
            current = self.parents.get(id(current))
        return names[::-1]

class _TreeBuilder(SchemaVisitor):
    """Hangs a Node on the tree for every field the schema interpreter reads."""

    def __init__(self, walker: _Walker, parent: Node):
        self.walker = walker
        self.stack: list[tuple[Node, bool]] = [(parent, False)]  # (node, is an array)

    def read_count(self, array: Array, buf: Buffer, pos: int) -> tuple[int, int]:
        """The count alone: unlike the codec, walk on and fail where the data really ends."""
        if array.compact:
            return p.read_compact_length(buf, pos, array.nullable, "array")
        count, body = p.read_int32(buf, pos)
        if count < -1 or (count == -1 and not array.nullable):
            raise ProtocolError(
                f"array length {count} at offset {pos} is negative",
                offset=pos,
                expected="an array length >= 0" + (" or -1" if array.nullable else ""),
            )
        if array.element.min_size == 0 and count > len(buf):
            raise ProtocolError(
                f"array length {count} at offset {pos} is implausible",
                offset=pos,
                expected=f"an array length of at most {len(buf)}",
            )
        return count, body

    def enter(self, name: str, type_name: str, start: int, count: int | None, body: int) -> None:
        parent = self.stack[-1][0]
        node = Node(name, start, body - start, type_name, space=self.walker.space)
        if count is not None:
            node.value = None if count < 0 else f"{count} item{'s' if count != 1 else ''}"
        parent.children.append(node)
        self.walker.parents[id(node)] = parent
        self.stack.append((node, count is not None))

    def element(self, end: int) -> None:
        node = self.stack[-1][0]
        node.length = end - node.offset

    def leave(self, end: int) -> None:
        node, is_array = self.stack.pop()
        if not is_array:
            node.length = end - node.offset

    def field(self, name: str, field_type: FieldType | None, type_name: str, start: int,
              end: int, value: object) -> None:
        parent = self.stack[-1][0]
        node = Node(name, start, end - start, type_name, value, space=self.walker.space)
        parent.children.append(node)
        if isinstance(field_type, Records):
            if not isinstance(value, bytes | bytearray | memoryview):  # null: no record set
                node.value = None
                return
            node.value = f"{len(value)} bytes"
            if value and is_message_set(value):  # formats v0/v1: Produce v0-2, Fetch v0-3
                _MessageSetWalker(self.walker.data[:end], self.walker.space,
                                  self.walker.buffers).messages(node, end - len(value), end)
            elif value:
                walker = _BatchWalker(self.walker.data[:end], self.walker.space,
                                      self.walker.buffers)
                walker.batches(node, end - len(value), end)
        elif field_type is not None:
            node.note = _meaning(name, value)
        elif type_name == "tagged_fields":
            tag_nodes(node, self.walker.data, self.walker.space)

    def failed(self, exc: ProtocolError, name: str, type_name: str) -> ProtocolError:
        return self.walker.named(exc, self.stack[-1][0], name, type_name)


def tag_nodes(node: Node, data: Buffer, space: str = "") -> None:
    """A tagged-field block (KIP-482) shown field by field: its count, then each tag's
    number, size and bytes. A tag this codec has no name for is still shown, by number:
    that a reader may skip what it does not know is what tagged fields are for."""
    count, pos = p.read_unsigned_varint(data, node.offset)
    node.value = "none" if not count else f"{count} tagged field{'s' * (count > 1)}"
    node.children.append(Node("count", node.offset, pos - node.offset, "varint", count,
                              space=space))
    for _ in range(count):
        start = pos
        tag, pos = p.read_unsigned_varint(data, pos)
        size, body = p.read_unsigned_varint(data, pos)
        raw = bytes(data[body:body + size])
        tagged = Node(f"tag {tag}", start, body + size - start, "tagged field",
                      f"{size} bytes", space=space)
        tagged.children.append(Node("tag", start, pos - start, "varint", tag, space=space))
        tagged.children.append(Node("size", pos, body - pos, "varint", size, space=space))
        tagged.children.append(Node("data", body, size, "bytes", raw, space=space))
        node.children.append(tagged)
        pos = body + size


_HEADER_FIELDS = [
    ("base_offset", p.INT64),
    ("batch_length", p.INT32),
    ("partition_leader_epoch", p.INT32),
    ("magic", p.INT8),
    ("crc", p.UINT32),
    ("attributes", p.INT16),
    ("last_offset_delta", p.INT32),
    ("base_timestamp", p.INT64),
    ("max_timestamp", p.INT64),
    ("producer_id", p.INT64),
    ("producer_epoch", p.INT16),
    ("base_sequence", p.INT32),
    ("records_count", p.INT32),
]


class AttributeBits(TypedDict):
    """A RecordBatch's attribute bits: each (raw bits, meaning), and all 16 as text."""

    compression: tuple[int, str]
    timestamp_type: tuple[int, str]
    is_transactional: tuple[int, bool]
    is_control: tuple[int, bool]
    has_delete_horizon: tuple[int, bool]
    bits: str


def attribute_bits(attributes: int) -> AttributeBits:
    """A RecordBatch's attributes int16, bit by bit (bit 0 is the least significant)."""
    bits = bitstring.Bits(uint=attributes & 0xFFFF, length=16)
    codec = bits[13:16].uint
    try:
        codec_name = Compression(codec).name.lower()
    except ValueError:
        codec_name = f"unknown codec {codec}"
    return {
        "compression": (codec, codec_name),
        "timestamp_type": (int(bits[12]), "LogAppendTime" if bits[12] else "CreateTime"),
        "is_transactional": (int(bits[11]), bool(bits[11])),
        "is_control": (int(bits[10]), bool(bits[10])),
        "has_delete_horizon": (int(bits[9]), bool(bits[9])),
        "bits": bits.bin,
    }


class _BatchWalker(_Walker):
    """RecordBatch v2: the 61-byte header, then records (decompressed if need be)."""

    def batches(self, parent: Node, start: int, end: int) -> None:
        """The batches from ``start`` to ``end`` (the data's end), as batch_spans finds them."""
        pos = start
        for index, (pos, size) in enumerate(batch_spans(self.data, start)):
            length = size - LOG_OVERHEAD
            if pos + size > end and length >= 0:
                parent.children.append(Node(
                    "partial_batch", pos, end - pos, "bytes", f"{end - pos} of {size} bytes",
                    note="a partial trailing batch; clients ignore it", space=self.space))
                return
            if length < HEADER_SIZE - LOG_OVERHEAD or pos + size > end:
                raise ProtocolError(
                    f"batch at offset {pos} has batchLength {length}, too small for a "
                    f"RecordBatch v2 header",
                    offset=pos + 8,
                    expected=f"a batchLength of at least {HEADER_SIZE - LOG_OVERHEAD}",
                )
            node = Node(f"batch {index}", pos, size, "RecordBatch", space=self.space)
            parent.children.append(node)
            self.batch(node, pos, pos + size)
            pos += size
        if pos < end:
            parent.children.append(Node(
                "partial_batch", pos, end - pos, "bytes", bytes(self.data[pos:end]),
                note="a partial trailing batch; clients ignore it", space=self.space))

    def batch(self, node: Node, start: int, end: int) -> None:
        values: dict[str, int] = {}
        pos = start
        for name, st in _HEADER_FIELDS:
            values[name], pos = self.leaf(node, name, _type_name(st), _fixed_reader(st), pos)
        magic = node.child("magic")
        if values["magic"] != 2:
            raise ProtocolError(
                f"batch at offset {start} has magic {values['magic']}; only RecordBatch v2 "
                f"(magic 2) is supported",
                offset=magic.offset,
                expected="magic 2",
            )
        crc_node = node.child("crc")
        actual = crc32c(self.data[start + 21 : end])
        crc_node.value = f"0x{values['crc']:08x}"
        crc_node.note = (
            "CRC-32C of bytes 21.. matches"
            if actual == values["crc"]
            else f"MISMATCH: the bytes have CRC-32C 0x{actual:08x}"
        )
        attributes = node.child("attributes")
        bits = attribute_bits(values["attributes"])
        attributes.note = f"bits {bits['bits'][:8]} {bits['bits'][8:]}"
        described: list[tuple[str, str, tuple[int, object]]] = [
            ("compression", "bits 0-2", bits["compression"]),
            ("timestamp_type", "bit 3", bits["timestamp_type"]),
            ("is_transactional", "bit 4", bits["is_transactional"]),
            ("is_control", "bit 5", bits["is_control"]),
            ("has_delete_horizon", "bit 6", bits["has_delete_horizon"]),
        ]
        for bit_name, label, (raw, meaning) in described:
            attributes.children.append(Node(
                bit_name, attributes.offset, 2, label, f"{raw} ({meaning})", space=self.space))
        codec = bits["compression"][0]
        count = values["records_count"]
        records_node = Node("records", pos, end - pos, "records", f"{count} records",
                            space=self.space)
        node.children.append(records_node)
        if codec == 0:
            walker = _RecordWalker(self.data[:end], self.space, self.buffers, values)
            walker.records(records_node, pos, count)
            return
        try:
            inner = decompress(codec, bytes(self.data[pos:end]))
        except Exception as exc:  # any codec failure is a finding to show, not a crash
            raise ProtocolError(
                f"cannot decompress the {bits['compression'][1]} records of the batch at offset "
                f"{start}: {exc}",
                offset=pos,
                expected=f"{bits['compression'][1]}-compressed records",
            ) from None
        records_node.note = f"{bits['compression'][1]}: {end - pos} bytes -> {len(inner)} bytes"
        space = f"decompressed@{pos}"
        self.buffers[space] = inner
        walker = _RecordWalker(inner, space, self.buffers, values)
        walker.records(records_node, 0, count)


class _RecordWalker(_Walker):
    """The varint-coded records inside a batch."""

    def __init__(
        self, data: bytes, space: str, buffers: dict[str, bytes], header: dict[str, int]
    ):
        super().__init__(data, space, buffers)
        self.header = header

    def records(self, parent: Node, pos: int, count: int) -> None:
        for index in range(count):
            node = Node(f"record {index}", pos, 0, "Record", space=self.space)
            parent.children.append(node)
            length, body = self.leaf(node, "length", "varint", p.read_varint, pos)
            if length < 0 or body + length > len(self.data):
                raise ProtocolError(
                    f"record {index} at offset {pos} claims {length} bytes but "
                    f"{len(self.data) - body} remain",
                    offset=pos,
                    expected="a record length that fits the batch",
                )
            end = body + length
            pos = self.record_body(node, body)
            node.length = pos - node.offset
            if pos != end:
                raise ProtocolError(
                    f"record {index} should end at offset {end} but its fields end at {pos}",
                    offset=min(pos, end),
                    expected=f"record {index} to end at offset {end}",
                )
            delta = _int_value(node.child("offset_delta"))
            ts_delta = _int_value(node.child("timestamp_delta"))
            node.value = (
                f"offset {self.header['base_offset'] + delta}, "
                f"timestamp {self.header['base_timestamp'] + ts_delta}"
            )
            if self.header["attributes"] & ATTR_CONTROL:
                _note_control_record(node)

    def record_body(self, node: Node, pos: int) -> int:
        _, pos = self.leaf(node, "attributes", "int8", p.read_int8, pos)
        _, pos = self.leaf(node, "timestamp_delta", "varlong", p.read_varlong, pos)
        _, pos = self.leaf(node, "offset_delta", "varint", p.read_varint, pos)
        pos = self.varint_bytes(node, "key", pos)
        pos = self.varint_bytes(node, "value", pos)
        count, pos = self.leaf(node, "header_count", "varint", p.read_varint, pos)
        for index in range(max(count, 0)):
            header = Node(f"header {index}", pos, 0, "Header", space=self.space)
            node.children.append(header)
            end = self.varint_bytes(header, "key", pos, text=True)
            end = self.varint_bytes(header, "value", end)
            header.length = end - pos
            pos = end
        return pos

    def varint_bytes(self, parent: Node, name: str, pos: int, text: bool = False) -> int:
        length, body = p.read_varint(self.data, pos)
        parent.children.append(Node(f"{name}_length", pos, body - pos, "varint", length,
                                    space=self.space))
        if length < 0:
            parent.children[-1].note = "null"
            return body
        end = body + length
        if end > len(self.data):
            raise p.short_read(body, length, len(self.data) - body, f"{length} bytes of {name}")
        raw = bytes(self.data[body:end])
        value: bytes | str = raw
        if text:
            value = raw.decode("utf-8", errors="replace")
        parent.children.append(Node(name, body, length, "bytes", value, space=self.space))
        return end


_MESSAGE_FIELDS = [("offset", p.INT64), ("message_size", p.INT32), ("crc", p.UINT32),
                   ("magic", p.INT8), ("attributes", p.INT8)]


class _MessageSetWalker(_Walker):
    """Message formats v0/v1 (legacy_records.py): messages one after another, a compressed
    one's value opened as the message set inside it."""

    def messages(self, parent: Node, start: int, end: int) -> None:
        pos, index = start, 0
        while end - pos >= 12:
            (size,) = p.INT32.unpack_from(self.data, pos + 8)
            if size < 0 or pos + 12 + size > end:
                break
            node = Node(f"message {index}", pos, 12 + size, "Message", space=self.space)
            parent.children.append(node)
            self.message(node, pos, pos + 12 + size)
            pos, index = pos + 12 + size, index + 1
        if pos < end:
            parent.children.append(Node(
                "partial_message", pos, end - pos, "bytes", f"{end - pos} bytes",
                note="a partial trailing message; clients ignore it", space=self.space))

    def message(self, node: Node, start: int, stop: int) -> None:
        values: dict[str, int] = {}
        pos = start
        for name, st in _MESSAGE_FIELDS:
            values[name], pos = self.leaf(node, name, _type_name(st), _fixed_reader(st), pos)
        magic = values["magic"]
        if magic not in (0, 1):
            raise ProtocolError(f"message at offset {start} has magic {magic}",
                                offset=start + 16, expected="magic 0 or 1 (a message set)")
        actual = zlib.crc32(self.data[start + 16:stop])
        crc = node.child("crc")
        crc.value = f"0x{values['crc']:08x}"
        crc.note = ("CRC-32 (zlib's, not CRC-32C) of magic.. matches" if actual == values["crc"]
                    else f"MISMATCH: the bytes have CRC-32 0x{actual:08x}")
        codec = values["attributes"] & 0x07
        log_append = magic == 1 and values["attributes"] & 0x08
        node.child("attributes").note = (
            f"codec {codec} ({_codec_name(codec)})"
            + (f", {'LogAppendTime' if log_append else 'CreateTime'}" if magic else ""))
        if magic == 1:
            _, pos = self.leaf(node, "timestamp", "int64", p.read_int64, pos)
        _, pos = self.leaf(node, "key", "nullable_bytes", p.read_bytes, pos, nullable=True)
        value, pos = self.leaf(node, "value", "nullable_bytes", p.read_bytes, pos, nullable=True)
        node.value = f"offset {values['offset']}, magic {magic}"
        if pos != stop:
            raise ProtocolError(f"message at offset {start} should end at {stop}, its fields "
                                f"end at {pos}", offset=min(pos, stop),
                                expected=f"the message to end at offset {stop}")
        if codec and value is not None:
            self.wrapper(node.children[-1], codec, magic, value, pos - len(value))

    def wrapper(self, value_node: Node, codec: int, magic: int, value: bytes, at: int) -> None:
        try:
            inner = decompress(codec, fix_lz4_v0(value) if magic == 0 else value)
        except Exception as exc:  # any codec failure is a finding to show, not a crash
            raise ProtocolError(f"cannot decompress the {_codec_name(codec)} message set of the "
                                f"wrapper at offset {at}: {exc}", offset=at,
                                expected=f"a {_codec_name(codec)}-compressed message set") from None
        value_node.note = (f"wrapper: {_codec_name(codec)}, {len(value)} bytes -> "
                           f"{len(inner)} bytes of inner messages"
                           + (" (offsets relative)" if magic == 1 else ""))
        space = f"decompressed@{at}"
        self.buffers[space] = inner
        _MessageSetWalker(inner, space, self.buffers).messages(value_node, 0, len(inner))


def _codec_name(codec: int) -> str:
    try:
        return Compression(codec).name.lower()
    except ValueError:
        return f"unknown codec {codec}"


def _int_value(node: Node) -> int:
    """A varint leaf's value (the walker made it an int)."""
    value = node.value
    if not isinstance(value, int):
        raise TypeError(f"{node.name} holds {value!r}, not a number")
    return value


def _note_control_record(record: Node) -> None:
    """Say what a control record's key and value mean (a transaction's commit or abort)."""
    for child in record.children:
        raw = child.value if isinstance(child.value, bytes) else b""
        if child.name == "key" and len(raw) >= 4:
            version, kind = struct.unpack_from(">hh", raw)
            meaning = {0: "ABORT", 1: "COMMIT"}.get(kind, "unknown type")
            child.note = f"control key: version {version}, type {kind} ({meaning} marker)"
            record.value = f"{record.value}, {meaning} marker"
        elif child.name == "value" and len(raw) >= 6:
            version, epoch = struct.unpack_from(">hi", raw)
            child.note = f"end transaction marker: version {version}, coordinator epoch {epoch}"


def _meaning(name: str, value: object) -> str:
    """What a number means, for the fields whose numbers are names: API keys, error codes."""
    if not isinstance(value, int):
        return ""
    if name in ("api_key", "request_api_key"):
        return _api_name(value)
    if name == "error_code" and value != 0:
        code = ErrorCode.of(value)
        return code.name if code.value == value else "unknown error code"
    enumeration = _ACL_ENUMS.get(name)
    if enumeration is not None:
        try:
            return enumeration(value).kafka_name
        except ValueError:
            return "unknown"
    return ""


# The ACL APIs' numbered fields (their names appear in no other message).
_ACL_ENUMS: dict[str, type[AclOperation | AclPermissionType | PatternType]] = {
    "operation": AclOperation, "permission_type": AclPermissionType,
    "pattern_type": PatternType, "pattern_type_filter": PatternType,
    "resource_pattern_type": PatternType,
}


def _fixed_reader(st: struct.Struct) -> Callable[[Buffer, int], tuple[int | float, int]]:
    def read(buf: Buffer, pos: int) -> tuple[int | float, int]:
        return p.read_fixed(st, buf, pos, _type_name(st))

    return read


def _type_name(st: struct.Struct) -> str:
    return {"b": "int8", "h": "int16", "i": "int32", "q": "int64", "I": "uint32",
            "d": "float64"}[st.format[-1]]


def _plausible_request_start(data: Buffer, pos: int) -> bool:
    if len(data) < pos + 4:
        return False
    key, version = p.INT16.unpack_from(data, pos)[0], p.INT16.unpack_from(data, pos + 2)[0]
    try:
        low, high = known_versions(key)
    except ProtocolError:
        return False
    return low <= version <= high or key == ApiKey.API_VERSIONS


def has_length_prefix(data: Buffer, response: bool = False) -> bool:
    """Whether ``data`` most likely starts with the 4-byte frame length.

    Yes when that length equals the rest of the data. A truncated frame
    announces more than is there: then yes if the bytes after the length look
    like the start of a request (a known API key and version) and the bytes
    without it do not.
    """
    if len(data) < 4:
        return False
    length = p.INT32.unpack_from(data, 0)[0]
    if length == len(data) - 4:
        return True
    if length < len(data) - 4 or length > DEFAULT_MAX_LENGTH:
        return False
    if response:
        return True
    return _plausible_request_start(data, 4) and not _plausible_request_start(data, 0)


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name.title().replace("_", "")
    except ValueError:
        return f"api key {api_key}"


def dissect_frame(
    data: Buffer,
    *,
    prefix: bool | None = None,
    response: bool = False,
    api_key: int | None = None,
    api_version: int | None = None,
) -> Dissection:
    """Take a request (or, with ``response=True`` and its key and version, a response) apart.

    ``prefix``: whether ``data`` starts with the 4-byte frame length; ``None``
    detects it (the length equals the rest of the data).
    """
    data = bytes(data)
    root = Node("frame", 0, len(data), "frame")
    result = Dissection(data, root)
    walker = _Walker(data, "", result.decompressed)
    pos = 0
    try:
        if prefix is None:
            prefix = has_length_prefix(data, response)
        if prefix:
            length, pos = walker.leaf(root, "length", "int32", p.read_int32, 0)
            if length != len(data) - 4:
                root.children[-1].note = (
                    f"announces {length} bytes, {len(data) - 4} present"
                    + (" (truncated)" if length > len(data) - 4 else " (extra bytes follow)")
                )
        if response:
            if api_key is None or api_version is None:
                raise ValueError("a response needs its api_key and api_version to be dissected")
            result.summary = f"response {_api_name(api_key)} v{api_version}"
            pos = _dissect_response(walker, root, pos, api_key, api_version, result)
        else:
            pos = _dissect_request(walker, root, pos, result)
        if pos != len(data):
            raise ProtocolError(
                f"the message ends at offset {pos} but {len(data) - pos} more bytes follow",
                offset=pos,
                expected="end of frame",
            )
    except ProtocolError as exc:
        result.error = exc
    return result


def _dissect_request(walker: _Walker, root: Node, pos: int, result: Dissection) -> int:
    header = Node("header", pos, 0, "RequestHeader")
    root.children.append(header)
    key, pos = walker.leaf(header, "request_api_key", "int16", p.read_int16, pos)
    header.children[-1].note = _meaning("api_key", key)
    version, pos = walker.leaf(header, "request_api_version", "int16", p.read_int16, pos)
    correlation_id, pos = walker.leaf(header, "correlation_id", "int32", p.read_int32, pos)
    result.summary = f"request {_api_name(key)} v{version}, correlation id {correlation_id}"
    header_version = request_header_version(key, version)
    _, pos = walker.leaf(header, "client_id", "nullable_string", p.read_string, pos,
                         nullable=True)
    if header_version >= 2:
        _, pos = walker.leaf(header, "tagged_fields", "tagged_fields", p.read_tagged_fields, pos)
        tag_nodes(header.children[-1], walker.data, walker.space)
    header.length = pos - header.offset
    header.note = f"request header v{header_version}"
    schema = request_schema(key, version)
    body = Node("body", pos, 0, schema.name)
    root.children.append(body)
    end = walker.struct(body, schema, pos)
    body.length = end - pos
    return end


def _dissect_response(
    walker: _Walker, root: Node, pos: int, api_key: int, api_version: int, result: Dissection
) -> int:
    header = Node("header", pos, 0, "ResponseHeader")
    root.children.append(header)
    correlation_id, pos = walker.leaf(header, "correlation_id", "int32", p.read_int32, pos)
    if response_header_version(api_key, api_version) >= 1:
        _, pos = walker.leaf(header, "tagged_fields", "tagged_fields", p.read_tagged_fields, pos)
        tag_nodes(header.children[-1], walker.data, walker.space)
    header.length = pos - header.offset
    result.summary += f", correlation id {correlation_id}"
    schema = response_schema(api_key, api_version)
    body = Node("body", pos, 0, schema.name)
    root.children.append(body)
    end = walker.struct(body, schema, pos)
    body.length = end - pos
    return end


def dissect_records(data: Buffer) -> Dissection:
    """Take a record set apart: RecordBatches as stored in a log, or an old message set."""
    data = bytes(data)
    root = Node("records", 0, len(data), "records")
    result = Dissection(data, root, summary=f"record set of {len(data)} bytes")
    try:
        if is_message_set(data):
            _MessageSetWalker(data, "", result.decompressed).messages(root, 0, len(data))
        else:
            _BatchWalker(data, "", result.decompressed).batches(root, 0, len(data))
    except ProtocolError as exc:
        result.error = exc
    return result


# --- rendering -------------------------------------------------------------------------------


def _hex(raw: bytes, limit: int = 12) -> str:
    shown = raw[:limit].hex(" ")
    return shown + (" …" if len(raw) > limit else "")


def _value_text(node: Node) -> str:
    value = node.value
    if isinstance(value, bytes):
        text = repr(value) if len(value) <= 40 else repr(value[:40])[:-1] + "…'"
    elif value is None and node.type.startswith(("nullable", "compact_nullable")):
        text = "null"
    elif value is None:
        text = ""
    else:
        quote = isinstance(value, str) and not node.children and not node.type.startswith("bit")
        text = repr(value) if quote else str(value)
    if node.note:
        text = f"{text}  ({node.note})" if text else f"({node.note})"
    return text


def render_tree(dissection: Dissection) -> list[str]:
    """One line per field: offset, length, name (indented), raw hex, value."""
    lines = [f"{'offset':>6} {'len':>5}  {'field':<44} {'raw':<38} value"]

    def walk(node: Node, depth: int) -> None:
        offset = f"{node.offset}" if not node.space else f"+{node.offset}"
        name = "  " * depth + node.name
        leafish = (not node.children or node.name == "attributes") and not node.type.startswith(
            "bit"
        )
        raw = _hex(_raw(dissection, node)) if leafish else ""
        label = f"{name} : {node.type}" if len(name) + len(node.type) < 41 else name
        lines.append(f"{offset:>6} {node.length:>5}  {label:<44} {raw:<38} {_value_text(node)}")
        for child in node.children:
            walk(child, depth + 1)

    for child in dissection.root.children:
        walk(child, 0)
    return lines


def _raw(dissection: Dissection, node: Node) -> bytes:
    if node.space:
        buffer = dissection.decompressed.get(node.space, b"")
        return buffer[node.offset : node.offset + node.length]
    return dissection.data[node.offset : node.offset + node.length]


def render_error(dissection: Dissection, context_rows: int = 2) -> list[str]:
    """A hex dump around the first bad byte, a caret under it, and what was expected."""
    error = dissection.error
    if error is None:
        return []
    data = dissection.data
    offset = error.offset if error.offset is not None else len(data)
    offset = max(0, min(offset, len(data)))
    row_of_error = offset // 16
    first = max(0, row_of_error - context_rows)
    last = min(max(len(data) - 1, 0) // 16, row_of_error + context_rows)
    lines = [f"error at byte {offset}: {error}"]
    for row in range(first, last + 1):
        chunk = data[row * 16 : row * 16 + 16]
        lines.append(f"  {row * 16:04x}  {chunk.hex(' ')}")
        if row == row_of_error:
            column = (offset - row * 16) * 3
            marker = "^^" if offset < len(data) else "^ (end of data)"
            lines.append("        " + " " * column + marker)
    if row_of_error > last:  # the error is at the very end, past the last full row
        lines.append(f"  {row_of_error * 16:04x}  ")
        lines.append("        " + " " * ((offset - row_of_error * 16) * 3) + "^ (end of data)")
    if error.expected:
        lines.append(f"  expected: {error.expected}")
    return lines


def render(dissection: Dissection) -> str:
    """The whole report: summary, field tree, and the error (if any) with its caret."""
    head = f"{len(dissection.data)} bytes: {dissection.summary or 'unrecognised'}"
    lines = [head, "", *render_tree(dissection)]
    if dissection.error is not None:
        lines += ["", *render_error(dissection)]
    return "\n".join(lines) + "\n"


__all__ = [
    "Dissection",
    "Node",
    "attribute_bits",
    "dissect_frame",
    "dissect_records",
    "has_length_prefix",
    "render",
    "render_error",
    "render_tree",
]
