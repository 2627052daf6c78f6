"""Run a broker on a learner's code: ``python -m simplekafka.learn.plugged_broker DIR broker ...``.

``plug.install(DIR)`` first sets every passed exercise's functions into
SimpleKafka (the list goes to the broker's log), then the usual command line
runs, exactly as ``python -m simplekafka broker ...`` would. ``simplekafka
learn cluster`` gives this to LocalCluster as its launcher.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m simplekafka.learn.plugged_broker LEARNER_DIR broker [ARGS...]",
              file=sys.stderr)
        return 2
    from simplekafka.learn.plug import install

    for plugged in install(Path(argv[0])):
        print(f"learner code in use: {plugged}", flush=True)
    # Exactly ``python -m simplekafka ARGS`` from here, in this process (the CLI is the
    # layer above learn, so it is run as the main module, not imported).
    sys.argv = ["simplekafka", *argv[1:]]
    runpy.run_module("simplekafka", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
