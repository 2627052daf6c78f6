#!/usr/bin/env bash
# The main demo: ZooKeeper and three brokers on this machine, a replicated
# topic, acks=all writes, the leader of a partition killed with SIGKILL, the
# controller electing a new leader, a check that nothing acknowledged was lost,
# the killed broker rejoining the in-sync replicas, and last the Spark consumer:
# a PySpark streaming query counting the topic's records per 10-second window.
#
#   ./run_cluster.sh                 run unattended to the end (exit 0 when all is well)
#   ./run_cluster.sh --interactive   pause before each step
#   ./run_cluster.sh --keep          leave the cluster running at the end (Ctrl-C stops it)
#   ./run_cluster.sh --no-spark      skip the Spark step
#   ./run_cluster.sh --spark-master spark://HOST:PORT
#                                    run the Spark step on a Spark cluster
#                                    (simplekafka spark up) instead of local[2]
#   ./run_cluster.sh --secure        brokers, replication and clients over SASL_SSL
#                                    (TLS + SCRAM; docs/security.md)
#
# On a fresh machine it first sets itself up with only what the demo needs
# (tools/bootstrap.sh --demo: Java for ZooKeeper, a virtualenv with
# simplekafka[demo]); ./run_tests.sh installs the rest. Everything it starts, it stops.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
"$ROOT/tools/bootstrap.sh" --demo
VENV="${SIMPLEKAFKA_VENV:-$ROOT/.venv}"
export PATH="$VENV/bin:$PATH"
export SPARK_LOCAL_IP=127.0.0.1

exec "$VENV/bin/python" -m simplekafka.spark.demo "$@"
