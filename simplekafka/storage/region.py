"""A stretch of a segment file handed out unread: the fetch path's zero-copy unit.

``Log.read(..., region=True)`` answers with a :class:`FileRegion` instead of
bytes when the batches asked for lie in one segment file: the file (a
duplicated descriptor), where they start and how many bytes they take, fixed
when the read was made. Whoever writes the answer decides how the bytes leave:
the broker's socket writer gives them to ``os.sendfile`` (page cache to
socket, never through Python) or, where it cannot (TLS), calls :meth:`read`.

The descriptor is the region's own, so the segment may roll, be deleted by
retention or be closed while the region waits to be sent: the file's bytes
stay readable until the region is closed (on Linux an unlinked file lives
while a descriptor holds it). A truncation (a follower's log cut back to its
leader's) can shorten the file under a region; :meth:`read` and the sender
then find fewer bytes than promised and say so (``TruncatedRegionError``).
"""

from __future__ import annotations

import os

from simplekafka.storage.errors import StorageError


class TruncatedRegionError(StorageError):
    """The file ended before the region did: it was truncated after the read."""


class FileRegion:
    """``length`` bytes of a file from ``position``, on a descriptor the region owns.

    ``next_offset`` is an offset past every record in the region and at or
    before the next record of the log (what a read_committed answer's aborted
    transactions are collected up to). ``len()`` is the byte length, so a
    region stands where a record set's bytes would (sizes, "anything to say?").
    """

    __slots__ = ("fd", "length", "next_offset", "position")

    def __init__(self, fd: int, position: int, length: int, next_offset: int):
        self.fd = fd
        self.position = position
        self.length = length
        self.next_offset = next_offset

    def __len__(self) -> int:
        return self.length

    def read(self, start: int = 0, size: int | None = None) -> bytes:
        """The region's bytes from ``start`` (relative), ``size`` of them (default: the rest).

        The copy path: for a transport that must see the bytes (TLS), or a
        sender bridging a full socket."""
        size = self.length - start if size is None else size
        data = os.pread(self.fd, size, self.position + start)
        if len(data) != size:
            raise TruncatedRegionError(
                f"segment file ended {size - len(data)} bytes before the region did")
        return data

    def close(self) -> None:
        """Give the descriptor back (idempotent)."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:  # an answer dropped unsent (connection gone, fetch superseded)
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, length={self.length})"
