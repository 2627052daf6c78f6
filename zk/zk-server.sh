#!/usr/bin/env bash
# Start, stop or ask after the embedded ZooKeeper from a shell:
#   zk/zk-server.sh start [--port 2181] [--data-dir DIR]
#   zk/zk-server.sh status|stop [--data-dir DIR]
# A thin wrapper over `simplekafka zk`, which is the one launcher everything uses.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${SIMPLEKAFKA_VENV:-$ROOT/.venv}/bin/python"
[ -x "$PYTHON" ] || PYTHON=python3
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m simplekafka zk "$@"
