"""Lets Spark find ``format("simplekafka")`` without ``simplekafka.spark.register``.

PySpark (4.0 and later) imports every top-level module whose name starts with
``pyspark_`` and registers its ``DefaultSource`` as a Python data source.
"""

from simplekafka.spark import SimpleKafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
