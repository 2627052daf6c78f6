#!/usr/bin/env bash
# Prepares a fresh machine: system packages the tests and demos need, and a
# virtualenv in .venv with SimpleKafka installed (editable) with all its extras.
# Sourced by run_tests.sh and run_cluster.sh; safe to run again (it skips what is done).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SIMPLEKAFKA_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v kcat >/dev/null 2>&1; then
  echo "bootstrap: installing kcat (Debian package)" >&2
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq kcat >/dev/null
fi
if ! command -v dot >/dev/null 2>&1; then
  echo "bootstrap: installing graphviz (Debian package; the docs site's diagrams)" >&2
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq graphviz >/dev/null
fi
if ! command -v java >/dev/null 2>&1; then
  echo "bootstrap: installing a Java runtime for ZooKeeper" >&2
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

# The console's browser test drives Debian's Chromium; deploy/ is checked with docker-compose.
# The benchmarks' Redis Streams peer is Debian's redis-server with its redis-benchmark.
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v docker-compose >/dev/null 2>&1 || missing="$missing docker-compose"
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
command -v redis-benchmark >/dev/null 2>&1 || missing="$missing redis-tools"
if [ -n "$missing" ]; then
  echo "bootstrap: installing$missing (Debian packages)" >&2
  as_root apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV" >&2
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi

# Reinstall only when the packaging files change.
STAMP="$VENV/.simplekafka-installed"
WANT="$(cat "$ROOT/setup.py" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "bootstrap: installing simplekafka[all] into $VENV (pyspark builds once, ~2 min)" >&2
  "$VENV/bin/pip" install -q -e "$ROOT[all]"
  echo "$WANT" > "$STAMP"
fi

# librdkafka's C benchmark tool, from Debian's source package (once; a few minutes niced).
SIMPLEKAFKA_VENV="$VENV" "$ROOT/tools/build_rdkafka_performance.sh"
