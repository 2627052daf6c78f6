# Sourced by Spark's launch scripts while the docs site is built (conf.py points
# SPARK_CONF_DIR here). Spark 4 starts its JVM with --add-modules=jdk.incubator.vector,
# and Java prints "WARNING: Using incubator modules: jdk.incubator.vector" for it
# with no option to turn that one notice off: drop exactly that line from the
# JVM's stderr; everything else it prints still goes through.
exec 2> >(grep --line-buffered -v '^WARNING: Using incubator modules: jdk\.incubator\.vector$' >&2)
