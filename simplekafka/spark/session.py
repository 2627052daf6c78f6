"""A local SparkSession sized for a small machine, with the ``simplekafka`` format registered.

The stage 8 demo and chapter and the Spark step of ``run_cluster.sh`` start
Spark the same way through ``local_spark``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from simplekafka.spark import register


def local_spark(app_name: str = "simplekafka", cores: int = 2) -> Any:
    """``local[cores]`` Spark, quiet, on 127.0.0.1, UTC, few shuffle partitions.

    Spark's default of 200 shuffle partitions costs about ten times more per
    micro-batch on two cores, and it is fixed in a query's checkpoint at its
    first start. Python workers run this interpreter, not whatever ``python3``
    is first on PATH.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{cores}]").appName(app_name)
             .config("spark.sql.shuffle.partitions", str(cores))
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
