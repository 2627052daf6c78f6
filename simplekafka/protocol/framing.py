"""Kafka's framing: every request and response is a 4-byte big-endian size, then that many bytes.

TCP delivers a byte stream, not messages: one ``recv`` may hold half a frame or
three and a half. :class:`FrameDecoder` buffers whatever arrives and hands back
complete payloads, whatever the split. It checks the length prefix before
buffering the body, so a peer cannot make it hold gigabytes by announcing them
(Twisted's ``Int32StringReceiver.MAX_LENGTH`` does the same).
"""

from __future__ import annotations

import struct

from simplekafka.protocol.errors import ProtocolError

_SIZE = struct.Struct(">i")
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
        self._buffer = bytearray()
        self._offset = 0  # stream offset of _buffer[0], for error messages

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes from the stream; return every frame now complete (payloads only).

        With nothing buffered (the usual case: whole frames per read) the frames
        are cut straight out of ``data``; only an incomplete tail is kept.
        """
        buffered = bool(self._buffer)
        if buffered:
            self._buffer += data
        source = self._buffer if buffered else data
        frames: list[bytes] = []
        pos = 0
        available = len(source)
        while available - pos >= 4:
            (length,) = _SIZE.unpack_from(source, pos)
            if length < 0 or length > self.max_length:
                raise FrameTooLargeError(
                    f"frame at stream offset {self._offset + pos} announces {length} bytes; "
                    f"the limit is {self.max_length}",
                    length, frames,
                    offset=self._offset + pos,
                    expected=f"a frame length between 0 and {self.max_length}",
                )
            end = pos + 4 + length
            if end > available:
                break
            frames.append(bytes(source[pos + 4 : end]))
            pos = end
        if buffered:
            if pos:
                del self._buffer[:pos]
        elif pos < available:
            self._buffer = bytearray(source[pos:])
        self._offset += pos
        return frames

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buffer)


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix a payload with its 4-byte big-endian length."""
    return _SIZE.pack(len(payload)) + bytes(payload)
