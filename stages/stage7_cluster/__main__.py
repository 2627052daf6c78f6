"""Stage 7 demo: a failover on three real brokers, checked for lost records.

Run it with ``python -m stages.stage7_cluster`` (``./run_cluster.sh`` runs the
same walk-through after setting the machine up). It starts ZooKeeper and three
brokers, creates a topic with three partitions replicated three times
(min.insync.replicas 2), keeps a producer writing with acks=all while the leader
of partition 0 is SIGKILLed, shows the new leader and the ISRs, reads
everything back through the checker, and restarts the killed broker until it is
in every ISR again. ``--interactive`` pauses before each step, ``--keep``
leaves the cluster running until Ctrl-C. Files go to $SIMPLEKAFKA_DEMO_DIR if
set, else a temporary directory. About 40 s.
"""

from __future__ import annotations

import sys

from simplekafka.cluster.demo import main

if __name__ == "__main__":
    sys.exit(main())
