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

# The steps overlap where they can (a fresh CI machine spends minutes here, most of it
# downloading): the virtualenv's pip install runs beside the Debian packages' install,
# and the rdkafka_performance build (apt, then a niced compile) beside the class-data
# archives. What each step does is unchanged; only when it runs.

# apt_packages "why" COMMAND PACKAGE [COMMAND PACKAGE ...]: note each Debian PACKAGE whose
# COMMAND is missing; apt_install installs all the noted ones with one apt-get update and
# one apt-get install.
APT_MISSING="" APT_WHY=""
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
    APT_MISSING="$APT_MISSING$missing"
    APT_WHY="${APT_WHY:+$APT_WHY; }$why"
  fi
}
apt_install() {
  if [ -n "$APT_MISSING" ]; then
    echo "bootstrap: installing$APT_MISSING (Debian packages; $APT_WHY)" >&2
    as_root apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq $APT_MISSING >/dev/null
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

# pip_install: the virtualenv and simplekafka[$EXTRA] in it (needs no Debian package).
pip_install() {
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
}

# in_background NAME COMMAND...: run it with its output kept in a file; await NAME
# waits for it and fails the bootstrap, showing that output, if it failed.
LOGS=""
declare -A PIDS=()
in_background() {
  local name="$1"
  shift
  if [ -z "$LOGS" ]; then
    LOGS="$(mktemp -d "${TMPDIR:-/tmp}/simplekafka-bootstrap.XXXXXX")"
    trap 'rm -rf "$LOGS"' EXIT
  fi
  "$@" >"$LOGS/$name" 2>&1 &
  PIDS[$name]=$!
}
await() {
  if ! wait "${PIDS[$1]}"; then
    cat "$LOGS/$1" >&2
    echo "bootstrap: $1 failed" >&2
    kill "${PIDS[@]}" 2>/dev/null || true  # the other step still running, if any
    exit 1
  fi
  cat "$LOGS/$1" >&2
}

if [ "$DRY_RUN" = 1 ]; then
  echo "pip $EXTRA"
else
  in_background pip pip_install
  apt_install
  # librdkafka's C benchmark tool, from Debian's source package (tools/
  # build_rdkafka_performance.sh runs apt-get itself, so only after the install above).
  if [ "$MODE" = full ]; then
    in_background rdkafka_performance env SIMPLEKAFKA_VENV="$VENV" \
      "$ROOT/tools/build_rdkafka_performance.sh"
  fi
  await pip
fi

# Spark starts its Python processes (a streaming query's source runner, the daemons and
# the workers they fork) with pyspark's own pyspark.zip and py4j zip first on their path,
# and Python imports from a zip without bytecode: each compiled pyspark's modules from
# source again and reread the zip's directory, about a second of CPU per process, and
# every query starts several. A .pth in the virtualenv puts those two zips behind
# site-packages, so the processes import the installed pyspark (the zip holds the same
# release's files) from its bytecode; the zips stay on the path, last.
if [ "$DRY_RUN" = 1 ]; then
  echo "pyspark workers' path"
else
  "$VENV/bin/python" - <<'PTH'
import sysconfig
from pathlib import Path

line = ('import sys; sys.path.sort(key=lambda p: "/pyspark/python/lib/" in p '
        'and p.endswith(".zip"))\n')
pth = Path(sysconfig.get_path("purelib")) / "simplekafka-pyspark-workers.pth"
if not pth.exists() or pth.read_text() != line:
    pth.write_text(line)
PTH
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

# librdkafka's C benchmark tool, started above: its end (once; a few minutes niced).
if [ "$MODE" = full ]; then
  if [ "$DRY_RUN" = 1 ]; then
    echo "build rdkafka_performance"
  else
    await rdkafka_performance
  fi
fi
