"""Kafka's framing: every request and response is a 4-byte big-endian size, then that many bytes.

TCP delivers a byte stream, not messages: one ``recv`` may hold half a frame or
three and a half. :class:`FrameDecoder` buffers whatever arrives and hands back
complete payloads, whatever the split. It checks the length prefix before
buffering the body, so a peer cannot make it hold gigabytes by announcing them
(Twisted's ``Int32StringReceiver.MAX_LENGTH`` does the same).
"""

from __future__ import annotations

import struct
from collections.abc import Sized
from typing import TypeVar

from simplekafka.protocol.errors import ProtocolError

_SIZE = struct.Struct(">i")

#: A piece of a pieced payload: bytes, or a value its sender writes itself (a file region).
_Piece = TypeVar("_Piece", bound=Sized)
DEFAULT_MAX_LENGTH = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default


class FrameTooLargeError(ProtocolError):
    """A length prefix above ``max_length`` (or negative): the connection should be closed.

    ``length`` is the announced length; ``frames`` the complete frames that came
    before it in the same ``feed`` (a server still answers those, in order).
    """

    def __init__(self, message: str, length: int, frames: list[bytes],
                 offset: int | None = None, expected: str | None = None):
        super().__init__(message, offset, expected)
        self.length = length
        self.frames = frames


class FrameDecoder:
    """Turn a stream of byte chunks into complete frame payloads.

    >>> decoder = FrameDecoder()
    >>> decoder.feed(b"\\x00\\x00\\x00\\x03ab")
    []
    >>> decoder.feed(b"c\\x00\\x00")
    [b'abc']
    """

    def __init__(self, max_length: int = DEFAULT_MAX_LENGTH):
        self.max_length = max_length
        self._pieces: list[bytes] = []  # an incomplete frame, as it arrived
        self._pending = 0  # bytes in _pieces
        self._needed = 0  # bytes the incomplete frame needs, prefix included (0: unknown)
        self._offset = 0  # stream offset of the first byte not yet consumed (for errors)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes from the stream; return every frame now complete (payloads only).

        Frames are cut straight out of ``data``; a frame that arrives in several
        pieces is joined once, when its last piece is in (never re-copied per read).
        """
        if not self._pieces and len(data) >= 4:  # the usual read: exactly one whole frame
            (length,) = _SIZE.unpack_from(data, 0)
            if length == len(data) - 4 and length <= self.max_length:
                self._offset += len(data)
                return [bytes(data[4:])]
        if self._pieces:
            self._pieces.append(bytes(data))
            self._pending += len(data)
            if not self._needed:
                if self._pending < 4:
                    return []
                head = b"".join(self._pieces)
                self._pieces = [head]
                self._needed = 4 + self._check(head, 0, [])
            if self._pending < self._needed:
                return []
            data = b"".join(self._pieces)
            self._pieces, self._pending, self._needed = [], 0, 0
        frames: list[bytes] = []
        pos = 0
        end = len(data)
        while end - pos >= 4:
            frame_end = pos + 4 + self._check(data, pos, frames)
            if frame_end > end:
                self._needed = frame_end - pos
                break
            frames.append(bytes(data[pos + 4 : frame_end]))
            pos = frame_end
        self._offset += pos
        if pos < end:
            self._pieces = [bytes(data[pos:])]
            self._pending = end - pos
        return frames

    def _check(self, buf: bytes | bytearray | memoryview, pos: int, frames: list[bytes]) -> int:
        """The length announced at ``pos``; FrameTooLargeError if out of bounds."""
        (length,) = _SIZE.unpack_from(buf, pos)
        if length < 0 or length > self.max_length:
            raise FrameTooLargeError(
                f"frame at stream offset {self._offset + pos} announces {length} bytes; "
                f"the limit is {self.max_length}",
                length, frames,
                offset=self._offset + pos,
                expected=f"a frame length between 0 and {self.max_length}",
            )
        return length

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return self._pending


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix a payload with its 4-byte big-endian length."""
    return _SIZE.pack(len(payload)) + bytes(payload)


def frame_pieces(payload: bytes | list[_Piece]) -> list[bytes | _Piece]:
    """A payload framed as pieces to send in turn: ``[frame]`` for bytes; for a pieced
    payload (``encode_response`` of a Fetch answer holding file regions) the length
    prefix joins its first piece and held values stay as they are."""
    if not isinstance(payload, list):
        return [_SIZE.pack(len(payload)) + bytes(payload)]
    first = payload[0]
    if not isinstance(first, bytes):  # PiecedOutput.pieces starts with the header's bytes
        raise TypeError(f"a pieced payload starts with bytes, not {type(first).__name__}")
    return [_SIZE.pack(sum(len(piece) for piece in payload)) + first, *payload[1:]]
