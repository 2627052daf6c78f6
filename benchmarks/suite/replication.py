"""replication: what three brokers, replication factor 3 and acks=all cost.

Throughput through confluent-kafka (``bench_replication.produce_rate``): one
broker with acks=1 against three brokers, RF 3, acks=all, min.insync 2, in
the same run. Latency: ``rdkafka_performance -l`` at the latency scenario's
rate against the three brokers with acks=all, drawn as a histogram beside the
one-broker one (the follower fetch and high-watermark round trips are the
difference), and again with the tool's pacing thread at SCHED_IDLE.
"""

from __future__ import annotations

from benchmarks import bench_replication
from benchmarks.suite import latency as latency_scenario
from benchmarks.suite.core import Context, Curve, Figure, new_topic

THREE_BROKERS = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "10000"}


def replication(ctx: Context) -> tuple[list[Figure], list[Curve]]:
    n = ctx.sizes.messages
    single = ctx.cluster(1).bootstrap_servers
    three = ctx.cluster(3, THREE_BROKERS)
    ctx.step("replication: 1 broker acks=1")
    one_rate = bench_replication.produce_rate(single, new_topic(single, "rf1"), n, 100, "1")
    ctx.step("replication: 3 brokers RF 3 acks=all")
    topic = new_topic(three.bootstrap_servers, "rf3", 1, 3, {"min.insync.replicas": "2"})
    three.wait_for_isr(topic, 0, [1, 2, 3])
    three_rate = bench_replication.produce_rate(three.bootstrap_servers, topic, n, 100, "all")
    figures = [
        Figure("replication", "confluent-kafka, 1 broker, acks=1", one_rate, "records/s"),
        Figure("replication", "confluent-kafka, 3 brokers RF 3, acks=all", three_rate,
               "records/s"),
        Figure("replication", "RF 3 acks=all / 1 broker acks=1", three_rate / one_rate, "x"),
    ]
    curves = [Curve("replication", "1 broker, acks=1", [0], [one_rate], "", "records/s",
                    kind="bar"),
              Curve("replication", "3 brokers RF 3, acks=all", [0], [three_rate], "",
                    "records/s", kind="bar")]
    runs = latency_scenario.c_runs(ctx, three.bootstrap_servers, 3, "-1")
    if runs:
        label = "C client, 3 brokers RF 3, acks=all"
        figures += latency_scenario.summarize("replication", label, runs)
        curves.append(latency_scenario.histogram("latency_histogram", label, runs))
        # As in the latency scenario: the tool's spinning pacing loop at SCHED_IDLE says how
        # much of the tail waits behind it for a CPU (three brokers need more of the two).
        idle = latency_scenario.c_runs(ctx, three.bootstrap_servers, 3, "-1", idle_pacer=True)
        label = "C client, 3 brokers RF 3, acks=all, pacing thread at SCHED_IDLE"
        figures += latency_scenario.summarize("replication", label, idle)
        curves.append(latency_scenario.histogram("latency_histogram", label, idle))
    return figures, curves
