#!/usr/bin/env bash
# The main demo. Prepares the machine (tools/bootstrap.sh), then runs the stage
# demos that exist, in order. When stage 7 lands this becomes the three-broker
# demo: ZooKeeper, three brokers, produce, consume, kill a leader, watch failover.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
"$ROOT/tools/bootstrap.sh"
VENV="${SIMPLEKAFKA_VENV:-$ROOT/.venv}"
export PATH="$VENV/bin:$PATH"
export SPARK_LOCAL_IP=127.0.0.1

for demo in stages/stage*/__main__.py; do
  stage="$(basename "$(dirname "$demo")")"
  printf '\n======== python -m stages.%s ========\n' "$stage"
  "$VENV/bin/python" -m "stages.$stage"
done
