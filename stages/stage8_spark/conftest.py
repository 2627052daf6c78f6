"""Stage 8's fixtures: ONE local SparkSession for the pytest process, a cluster per module.

A SparkSession costs 10-30 s to start and a JVM of about half a gigabyte, so
every Spark test of the run shares one local[2] session (two shuffle
partitions: the default 200 is about ten times slower on two cores): ``spark``
hands each module the active one (``getOrCreate``) and only the end of the
run stops it. A process holds one SparkContext, so test_standalone.py, whose
session runs on a Spark standalone cluster, stops a local one it finds and
leaves none behind; the next module's ``spark`` then starts a fresh one.
Tests that need a cluster of their own take ``spark_cluster``: three brokers,
one per test module.
"""

from __future__ import annotations

import pytest


def _stop_active_spark() -> None:
    """Stop the SparkSession of this process, if there is one (its queries first)."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is None:
        return
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(scope="session")
def _spark_teardown():
    """Stops whatever SparkSession is left at the end of the run."""
    yield
    _stop_active_spark()


@pytest.fixture(scope="module")
def spark(_spark_teardown):
    """The process's local[2] SparkSession, with the ``simplekafka`` format registered."""
    from simplekafka.spark.session import local_spark

    session = local_spark("simplekafka-stage8-tests", cores=2)
    session.sparkContext.setLogLevel("WARN")
    session.conf.set("spark.sql.streaming.stopTimeout", "30s")
    return session


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
