"""The notebooks' "now you try" checks: one line that says right, wrong (and where), or not yet.

A notebook's try cell leaves its answer as ``None``; the cell after it calls
:func:`check`. A check never raises, so a learner can try again and rerun, and
a notebook that nobody has tried still runs to the end. What it prints starts
with one of the three marks below, which the notebook tests read.
"""

from __future__ import annotations

from simplekafka.learn.report import first_difference

RIGHT = "✓"
WRONG = "✗"
NOT_YET = "…"


def check(what: str, got: object, expected: object) -> None:
    """Print whether ``got`` is ``expected``; for bytes, name the first byte that differs.

    It returns nothing, so that a notebook cell ending with it shows only what it printed.
    """
    if got is None:
        print(f"{NOT_YET} {what}: "
              "not tried yet (replace the None in the cell above, then run both)")
        return
    if got == expected:
        print(f"{RIGHT} {what}: right, {_short(got)}")
        return
    print(f"{WRONG} {what}: expected {_short(expected)}, got {_short(got)}")
    if isinstance(expected, bytes | bytearray) and isinstance(got, bytes | bytearray):
        at = first_difference(bytes(expected), bytes(got))
        print(f"  first wrong byte at offset {at}: expected "
              f"{_byte(expected, at)}, got {_byte(got, at)}")
    elif isinstance(expected, list | tuple) and isinstance(got, list | tuple):
        for index, (want, have) in enumerate(zip(expected, got)):
            if want != have:
                print(f"  first wrong item at index {index}: expected {want!r}, got {have!r}")
                break
        else:
            print(f"  expected {len(expected)} items, got {len(got)}")


def _byte(data: bytes | bytearray, at: int | None) -> str:
    return f"0x{data[at]:02x}" if at is not None and at < len(data) else "(the end)"


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
