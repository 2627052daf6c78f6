#!/usr/bin/env bash
# Builds librdkafka's C benchmark tool, rdkafka_performance, from Debian's
# librdkafka source package (deb-src), so the benchmarks can drive the broker
# with a client that adds no Python cost of its own. Idempotent: does nothing
# when the binary is there. Output: $VENV/opt/rdkafka_performance.
# The build is niced (the machine is shared); it takes a few minutes of CPU.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SIMPLEKAFKA_VENV:-$ROOT/.venv}"
OUT="$VENV/opt/rdkafka_performance"
if [ -x "$OUT" ]; then
  echo "rdkafka_performance: already built at $OUT" >&2
  exit 0
fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# deb-src entries for the Debian suites already configured (deb822 format).
SRC_LIST=/etc/apt/sources.list.d/simplekafka-deb-src.sources
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  echo "rdkafka_performance: adding deb-src entries ($SRC_LIST)" >&2
  sed -n '/^Types: deb$/,/^$/p' /etc/apt/sources.list.d/debian.sources \
    | sed 's/^Types: deb$/Types: deb-src/' | as_root tee "$SRC_LIST" >/dev/null
  as_root apt-get update -qq >/dev/null
fi
for tool in dpkg-source gcc make; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq dpkg-dev build-essential >/dev/null
    break
  fi
done

WORK="$VENV/opt/build-librdkafka"
mkdir -p "$WORK"
cd "$WORK"
if ! ls -d librdkafka-*/ >/dev/null 2>&1; then
  echo "rdkafka_performance: apt-get source librdkafka" >&2
  apt-get source -qq librdkafka >/dev/null
fi
SRC="$(ls -d "$WORK"/librdkafka-*/ | head -1)"
cd "$SRC"
# Only what the benchmark needs: no TLS, SASL, compression libraries or curl,
# so no -dev packages beyond a C compiler are required.
if [ ! -f Makefile.config ]; then
  nice -n 19 ./configure --disable-ssl --disable-gssapi \
    --disable-sasl --disable-zstd --disable-zlib --disable-curl \
    --disable-lz4-ext >/dev/null
fi
JOBS="${JOBS:-1}"
nice -n 19 make -j"$JOBS" -C src librdkafka.a >/dev/null
nice -n 19 make -C examples rdkafka_performance >/dev/null
mkdir -p "$(dirname "$OUT")"
cp examples/rdkafka_performance "$OUT"
echo "rdkafka_performance: built $OUT" >&2
