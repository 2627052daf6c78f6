"""Stage 8's fixtures: ONE SparkSession for the whole pytest session, a cluster per module.

A SparkSession costs 10-30 s to start and a JVM of about half a gigabyte, so
every Spark test of the run shares ``spark`` (local[2], two shuffle
partitions: the default 200 is about ten times slower on two cores). Tests
that need a cluster of their own take ``spark_cluster``: three brokers, one per
test module.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """The session-wide SparkSession, with the ``simplekafka`` format registered."""
    from simplekafka.spark.session import local_spark

    session = local_spark("simplekafka-stage8-tests", cores=2)
    session.sparkContext.setLogLevel("WARN")
    session.conf.set("spark.sql.streaming.stopTimeout", "30s")
    try:
        yield session
    finally:
        for query in session.streams.active:
            query.stop()
        session.stop()


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    """A running three-broker LocalCluster, one per test module."""
    from simplekafka.cluster import LocalCluster

    # A small __transaction_state (Kafka's 50 partitions are slow to create on a busy machine).
    local = LocalCluster(brokers=3, base_dir=tmp_path_factory.mktemp("spark-cluster"),
                         broker_config={"transaction.state.log.num.partitions": 3})
    local.start()
    try:
        yield local
    finally:
        local.stop()
