"""Build RecordBatch v2 bytes for the stage 3 tests, chapter and demo.

The storage layer never decodes records, but the batches it stores should be
ones a Kafka client could read, so these are genuine batches from the stage 1
codec (:func:`simplekafka.protocol.records.build_batch`).
"""

from __future__ import annotations

from collections.abc import Sequence

from simplekafka.protocol.records import Record, build_batch


def make_batch(
    values: Sequence[bytes | None],
    timestamp: int = 1_700_000_000_000,
    keys: Sequence[bytes | None] | None = None,
    timestamp_step: int = 1,
) -> bytes:
    """An uncompressed batch of ``values`` (record i has timestamp + i * timestamp_step).

    The base offset is 0 and the leader epoch -1: a producer leaves those for
    the broker to fill in.
    """
    if not values:
        raise ValueError("a batch needs at least one record")
    keys = keys if keys is not None else [None] * len(values)
    return build_batch(
        [
            Record(timestamp=timestamp + i * timestamp_step, key=key, value=value)
            for i, (key, value) in enumerate(zip(keys, values))
        ]
    )
