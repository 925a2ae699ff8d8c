"""The Spark session a local run uses: local[N] in this process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def local_session(app_name: str, parallelism: int) -> SparkSession:
    # Python workers must run this interpreter: it is the one with Sluice installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    java_options = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}"
    return (
        SparkSession.builder.master(f"local[{parallelism}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.python.worker.reuse", "true")
        .config("spark.scheduler.mode", "FAIR")
        # Instants as Parquet's own UTC-adjusted type (not the legacy INT96); shown in UTC.
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
