"""produce and consume: records/s through one broker, for every client we have, beside Redis.

Clients: our Python Producer/Consumer and confluent-kafka's Python binding
(both from ``bench_client.py``), librdkafka's C ``rdkafka_performance``
(when built), and Redis Streams through ``redis-benchmark`` (when installed)
as the peer whose ratio the docs show. 100-byte values, one partition, acks=1.
"""

from __future__ import annotations

from benchmarks import bench_client
from benchmarks.suite import peers
from benchmarks.suite.core import Context, Curve, Figure, new_topic

SIZE = 100
BATCH_SIZE = 65_536


def _figures(scenario: str, rates: dict[str, float]) -> tuple[list[Figure], list[Curve]]:
    figures = [Figure(scenario, name, rate, "records/s", f"{rate * SIZE / 1e6:.1f} MB/s")
               for name, rate in rates.items()]
    kafka_c = rates.get("rdkafka_performance (C)")
    redis = rates.get("Redis Streams (C)")
    if kafka_c and redis:
        figures.append(Figure(scenario, "simplekafka / Redis, C clients", kafka_c / redis, "x"))
    curves = [Curve(scenario, name, [0], [rate], "", "records/s", kind="bar")
              for name, rate in rates.items()]
    return figures, curves


def _redis(ctx: Context) -> tuple[float, float] | None:
    """Redis XADD and XRANGE rates, measured once per run (both scenarios show them)."""
    if "redis" not in ctx.cache:
        tools = peers.redis_tools()
        if tools is None:
            ctx.note(peers.missing_redis_note())
            ctx.cache["redis"] = None
        else:
            ctx.step("Redis Streams: XADD, XRANGE")
            ctx.cache["redis"] = peers.redis_stream_rates(tools, ctx.sizes.messages, SIZE)
    return ctx.cache["redis"]


def produce(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    bootstrap = ctx.bootstrap()
    n = ctx.sizes.messages
    value = b"v" * SIZE
    rates: dict[str, float] = {}
    ctx.step("produce: simplekafka Producer")
    rates["simplekafka Producer (Python)"] = bench_client.ours_produce(
        bootstrap, new_topic(bootstrap, "ours"), n, value, BATCH_SIZE)[0]
    ctx.step("produce: confluent-kafka")
    rates["confluent-kafka (Python)"] = bench_client.ck_produce(
        bootstrap, new_topic(bootstrap, "ck"), n, value, BATCH_SIZE)[0]
    tool = peers.rdkafka_performance()
    if tool is None:
        ctx.note(peers.missing_rdkafka_note())
    else:
        ctx.step("produce: rdkafka_performance")
        rates["rdkafka_performance (C)"] = peers.c_produce(
            tool, bootstrap, new_topic(bootstrap, "c"), n, SIZE)
    redis = _redis(ctx)
    if redis is not None:
        rates["Redis Streams (C)"] = redis[0]
    return _figures("produce", rates)


def consume(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    bootstrap = ctx.bootstrap()
    n = ctx.sizes.messages
    tool = peers.rdkafka_performance()
    topic = new_topic(bootstrap, "consume")
    ctx.step("consume: filling the topic")
    if tool is not None:
        peers.c_produce(tool, bootstrap, topic, n, SIZE)
    else:
        bench_client.ck_produce(bootstrap, topic, n, b"v" * SIZE, BATCH_SIZE)
    rates: dict[str, float] = {}
    ctx.step("consume: simplekafka Consumer")
    rates["simplekafka Consumer (Python)"] = bench_client.ours_consume(bootstrap, topic, n)[0]
    ctx.step("consume: confluent-kafka")
    rates["confluent-kafka (Python)"] = bench_client.ck_consume(bootstrap, topic, n)[0]
    if tool is None:
        ctx.note(peers.missing_rdkafka_note())
    else:
        ctx.step("consume: rdkafka_performance")
        rates["rdkafka_performance (C)"] = peers.c_consume(tool, bootstrap, topic, n)
    redis = _redis(ctx)
    if redis is not None:
        rates["Redis Streams (C)"] = redis[1]
    figures, curves = _figures("consume", rates)
    from benchmarks.suite.zero_copy import zero_copy

    more = zero_copy(ctx)  # 100 B, 10 kB, 1 MB records with sendfile and without
    return figures + more[0], curves + more[1]
