#!/usr/bin/env bash
# The one test command: prepares the machine (tools/bootstrap.sh: the full set, where
# run_cluster.sh takes only the demo's), then runs the
# whole suite: unit, component, interop and system tests, lint, the import
# contract, the docs build, stage demos and notebooks. Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
"$ROOT/tools/bootstrap.sh"
VENV="${SIMPLEKAFKA_VENV:-$ROOT/.venv}"
export PATH="$VENV/bin:$PATH"
export SPARK_LOCAL_IP=127.0.0.1
# Bytecode for our own sources, once: the suite starts hundreds of Python processes
# (brokers, CLI commands, consoles, Spark's Python workers) that import simplekafka, and
# where PYTHONDONTWRITEBYTECODE is set each would compile it from source again (about half
# a second of CPU apiece). A .pyc whose source has changed since is not used. A file that
# does not compile is left to the tests to report.
PYTHONDONTWRITEBYTECODE= "$VENV/bin/python" -m compileall -q -j 0 simplekafka stages tests \
  benchmarks tools >/dev/null 2>&1 || true

set +e
# One rerun for a failed test: the real-process tests share two cores with
# ZooKeeper, brokers and clients, and a rare timing loss should not sink a run.
# Reruns stay visible: pytest marks them R, counts them in its summary line and
# names them in the rerun summary (-rR); tests/rerun_text.py prints how each first failed.
# Most of the wall time is spent waiting on real processes, so the suite runs on
# several pytest workers (SIMPLEKAFKA_TEST_WORKERS, 0 for one process); a test
# module, and all of Spark, stays on one worker (conftest.py's worker_group); the units
# go out longest first, by tools/test_durations.json (python tools/test_durations.py
# RUN.xml writes it anew from a run with --junitxml=RUN.xml).
"$VENV/bin/python" -m pytest --reruns 1 --reruns-delay 2 \
  -rR -n "${SIMPLEKAFKA_TEST_WORKERS:-3}" --dist loadscope --durations 40 "$@"
status=$?
set -e
if [ "$status" = 5 ]; then
  echo "run_tests.sh: pytest collected no tests; that is a failure, not a pass" >&2
  exit 1
fi
exit "$status"
