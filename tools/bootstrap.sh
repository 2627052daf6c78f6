#!/usr/bin/env bash
# Prepares a fresh machine; safe to run again (it skips what is done).
#
#   tools/bootstrap.sh            the full set, for the tests, docs, notebooks and benchmarks
#                                 (run_tests.sh): kcat, Graphviz, Java, Chromium, docker-compose,
#                                 Redis, simplekafka[all] in the virtualenv, and librdkafka's
#                                 rdkafka_performance (tools/build_rdkafka_performance.sh)
#   tools/bootstrap.sh --demo     only what the demo needs (run_cluster.sh): Java for ZooKeeper
#                                 and simplekafka[demo] (the Spark extra and confluent-kafka)
#   tools/bootstrap.sh --dry-run  print the plan, one line per step, and change nothing:
#                                 "apt PACKAGE", "pip EXTRA", "build rdkafka_performance"
#                                 (every step of the mode, whether or not it is done already)
#
# Both modes share one virtualenv (.venv, or $SIMPLEKAFKA_VENV): the full set after the
# demo's installs the rest into it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SIMPLEKAFKA_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

MODE=full
DRY_RUN=0
for arg in "$@"; do
  case "$arg" in
    --demo) MODE=demo ;;
    --dry-run) DRY_RUN=1 ;;
    *) echo "bootstrap: unknown argument $arg (--demo, --dry-run)" >&2; exit 2 ;;
  esac
done

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# apt_packages "why" COMMAND PACKAGE [COMMAND PACKAGE ...]: install each Debian PACKAGE
# whose COMMAND is missing, in one apt-get call.
apt_packages() {
  local why="$1" missing=""
  shift
  while [ "$#" -gt 0 ]; do
    if [ "$DRY_RUN" = 1 ]; then
      echo "apt $2"
    elif ! command -v "$1" >/dev/null 2>&1; then
      missing="$missing $2"
    fi
    shift 2
  done
  if [ -n "$missing" ]; then
    echo "bootstrap: installing$missing (Debian packages; $why)" >&2
    as_root apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq $missing >/dev/null
  fi
}

apt_packages "a Java runtime for ZooKeeper" java openjdk-17-jre-headless
if [ "$MODE" = full ]; then
  apt_packages "the interop tests and the learner's checks" kcat kcat
  apt_packages "benchmarks/bench_instructions.py (callgrind)" callgrind_control valgrind
  apt_packages "the docs site's diagrams" dot graphviz
  # The console's browser test drives Debian's Chromium; deploy/ is checked with docker-compose.
  # The benchmarks' Redis Streams peer is Debian's redis-server with its redis-benchmark.
  apt_packages "the console's browser test, deploy/'s check, the benchmarks' Redis peer" \
    chromium chromium docker-compose docker-compose \
    redis-server redis-server redis-benchmark redis-tools
fi

# The extra installed into the virtualenv: all of them for the tests, the demo's otherwise.
if [ "$MODE" = full ]; then EXTRA=all; else EXTRA=demo; fi

if [ "$DRY_RUN" = 1 ]; then
  echo "pip $EXTRA"
else
  if [ ! -x "$VENV/bin/python" ]; then
    echo "bootstrap: creating $VENV" >&2
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
  fi
  # Reinstall only when the packaging files change or a larger extra is wanted. The stamp
  # holds the packaging files' hash and the extra installed ("all" covers "demo"); a stamp
  # of the hash alone comes from before the demo had its own set, which installed "all".
  STAMP="$VENV/.simplekafka-installed"
  WANT="$(cat "$ROOT/setup.py" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
  HAVE_HASH="" HAVE_EXTRA=""
  if [ -f "$STAMP" ]; then read -r HAVE_HASH HAVE_EXTRA < "$STAMP" || true; fi
  HAVE_EXTRA="${HAVE_EXTRA:-all}"
  if [ "$HAVE_HASH" != "$WANT" ] || { [ "$EXTRA" = all ] && [ "$HAVE_EXTRA" != all ]; }; then
    echo "bootstrap: installing simplekafka[$EXTRA] into $VENV (pyspark builds once, ~2 min)" >&2
    "$VENV/bin/pip" install -q -e "$ROOT[$EXTRA]"
    echo "$WANT $EXTRA" > "$STAMP"
  fi
fi

# Class-data-sharing archives of a Spark driver's and ZooKeeper's classes (tools/jvm_cds.py:
# the suite's JVMs start on about half the CPU; once per virtualenv, about a minute).
if [ "$MODE" = full ]; then
  if [ "$DRY_RUN" = 1 ]; then
    echo "jvm class archives"
  else
    "$VENV/bin/python" "$ROOT/tools/jvm_cds.py" >/dev/null
  fi
fi

# librdkafka's C benchmark tool, from Debian's source package (once; a few minutes niced).
if [ "$MODE" = full ]; then
  if [ "$DRY_RUN" = 1 ]; then
    echo "build rdkafka_performance"
  else
    SIMPLEKAFKA_VENV="$VENV" "$ROOT/tools/build_rdkafka_performance.sh"
  fi
fi
