"""Open-files budget: a partition fails when descriptors run short, the process does not.

Each replica costs a descriptor (its active segment's ``.log``), so thousands
of partitions can reach the open-files limit. The last descriptors are kept for
what the whole broker needs (its ZooKeeper session reconnecting, client
connections, checkpoints): a log is not created once fewer than ``reserve``
are free, and that one partition fails with KAFKA_STORAGE_ERROR and a clear
message. Counting the open descriptors lists ``/proc/self/fd``, which costs
milliseconds at ten thousand, so it is done again only after half of the
headroom last seen could have been used.
"""

from __future__ import annotations

import errno
import os
import resource

from simplekafka.storage.errors import DescriptorsExhaustedError

# Descriptors kept for the ZooKeeper session, connections and checkpoints.
DESCRIPTOR_RESERVE = 64
_EXHAUSTED = (errno.EMFILE, errno.ENFILE)


def open_descriptors() -> int:
    """How many descriptors this process holds now."""
    for directory in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(directory))
        except OSError:
            continue
    return 0


def is_exhausted(exc: BaseException | None) -> bool:
    """Whether ``exc`` is the kernel saying no descriptor is left (EMFILE, ENFILE)."""
    return isinstance(exc, OSError) and exc.errno in _EXHAUSTED


class DescriptorBudget:
    """Refuses new logs while fewer than ``reserve`` descriptors are free."""

    def __init__(self, reserve: int = DESCRIPTOR_RESERVE):
        self.reserve = reserve
        self._unchecked = 0  # creations allowed before counting again

    @staticmethod
    def limit() -> int:
        return resource.getrlimit(resource.RLIMIT_NOFILE)[0]

    def check(self, what: str) -> None:
        """Raise DescriptorsExhaustedError if creating ``what`` would eat into the reserve."""
        if self._unchecked > 0:
            self._unchecked -= 1
            return
        limit = self.limit()
        if limit == resource.RLIM_INFINITY:
            self._unchecked = 1 << 30
            return
        free = limit - open_descriptors()
        if free <= self.reserve:
            raise DescriptorsExhaustedError(what, limit, self.reserve)
        self._unchecked = (free - self.reserve) // 2
