"""PySpark side of the store: the `keyevents` data source over the key-event journal
(spark.datasource) and the expiry analytics job (python -m spark.expiry_report).

    from spark import session
    spark = session()                       # local[*], `keyevents` registered
    df = spark.read.format('keyevents').option('url', 'redis://127.0.0.1:6379').load()
"""

import os
import sys


def session(master=None, app='keyevents', conf=None):
    """A SparkSession with the `keyevents` format registered.

    Workers run the driver's interpreter (PYSPARK_PYTHON defaults to sys.executable), so they
    import this package and redis-py from the same environment. Timestamps are UTC."""
    os.environ.setdefault('PYSPARK_PYTHON', sys.executable)
    os.environ.setdefault('PYSPARK_DRIVER_PYTHON', sys.executable)
    from pyspark.sql import SparkSession

    from .datasource import register

    builder = (
        SparkSession.builder.master(master or 'local[*]')
        .appName(app)
        .config('spark.sql.session.timeZone', 'UTC')
        .config('spark.ui.enabled', 'false')
        .config('spark.ui.showConsoleProgress', 'false')
        .config('spark.sql.shuffle.partitions', '4')
        .config('spark.python.worker.reuse', 'true')
    )
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get('SPARK_LOG_LEVEL', 'ERROR'))
    return register(spark)
