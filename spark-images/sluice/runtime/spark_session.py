"""The Spark session a pipeline runs on: local[N] in this process for `sluice run`, or the
one spark-submit set up (the SparkApplication's driver on Kubernetes)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from sluice.errors import SluiceError

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def spark_session(app_name: str, master: str | None, java_options: str = "") -> SparkSession:
    """`master` for a local run; None keeps what spark-submit was given. `java_options`: the
    local driver JVM's own (spark_classes' archive, say)."""
    _check_java()
    # Python workers must run this interpreter: it is the one with Sluice installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The driver's JVM only schedules (rows move in Python workers): the quick JIT alone
    # starts it about a second sooner on two cores.
    options = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG} -XX:TieredStopAtLevel=1 {java_options}"
    try:
        builder = SparkSession.builder.master(master) if master else SparkSession.builder
        return (
            builder.appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.extraJavaOptions", " ".join(options.split()))
            .config("spark.python.worker.reuse", "true")
            .config("spark.scheduler.mode", "FAIR")
            # Instants as Parquet's own UTC-adjusted type (not the legacy INT96); shown in UTC.
            .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate()
        )
    except Exception as exc:  # noqa: BLE001 - PySpark's launcher errors have no common type
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise SluiceError(f"local Spark did not start: {lines[0] if lines else type(exc).__name__}") from exc


def _check_java() -> None:
    """Spark's launcher otherwise fails with a page of shell and Python errors."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH"
        raise SluiceError(
            f"Spark needs Java 17 and found none ({where}); install it (Debian: apt-get install "
            "openjdk-17-jre-headless) or set JAVA_HOME"
        )
