"""The Spark session a pipeline runs on: local[N] in this process for `sluice run`, or the
one spark-submit set up (the SparkApplication's driver on Kubernetes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from sluice.errors import SluiceError

if TYPE_CHECKING:
    from py4j.java_gateway import JavaGateway

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def spark_session(
    app_name: str, master: str | None, java_options: str = "", quiet: threading.Event | None = None
) -> SparkSession:
    """`master` for a local run; None keeps what spark-submit was given. `java_options`: the
    local driver JVM's own (spark_classes' archive, say); once `quiet` is set, its output
    is no longer passed on."""
    _check_java()
    # Python workers must run this interpreter: it is the one with Sluice installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The driver's JVM only schedules (rows move in Python workers): the quick JIT alone
    # starts it about a second sooner on two cores.
    options = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG} -XX:TieredStopAtLevel=1 {java_options}"
    conf = (
        SparkConf()
        .setAppName(app_name)
        .setAll(
            [
                ("spark.ui.enabled", "false"),
                ("spark.ui.showConsoleProgress", "false"),
                ("spark.driver.extraJavaOptions", " ".join(options.split())),
                ("spark.python.worker.reuse", "true"),
                ("spark.scheduler.mode", "FAIR"),
                # Instants as Parquet's own UTC-adjusted type (not the legacy INT96); shown in UTC.
                ("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS"),
                ("spark.sql.session.timeZone", "UTC"),
            ]
        )
    )
    try:
        if master is None:
            return SparkSession.builder.config(conf=conf).getOrCreate()
        conf.setMaster(master)
        return SparkSession(SparkContext(conf=conf, gateway=_local_gateway(conf, quiet or threading.Event())))
    except Exception as exc:  # noqa: BLE001 - PySpark's launcher errors have no common type
        lines = [line for line in str(exc).splitlines() if line.strip()]
        raise SluiceError(f"local Spark did not start: {lines[0] if lines else type(exc).__name__}") from exc


def _local_gateway(conf: SparkConf, quiet: threading.Event) -> JavaGateway:
    """The local JVM, its output passed on to ours by a thread of this process until `quiet`
    is set (a JVM abandoned to be killed: its start-up lines would follow the run's last).

    It would otherwise hold this process's stdout and stderr: when this process exits, the
    JVM (which exits as its stdin closes) stops Spark, deletes its files and only then closes
    them, and a caller reading our output waited that long for its end (measured: 0.7 s)."""
    gateway = launch_gateway(conf, popen_kwargs={"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT})
    threading.Thread(target=_pass_on, args=(gateway.proc.stdout, quiet), name="spark-output", daemon=True).start()
    return gateway


def _pass_on(output: BinaryIO, quiet: threading.Event) -> None:
    for line in output:  # read to its end: a full pipe would stop the JVM
        if not quiet.is_set():
            sys.stderr.buffer.write(line)
            sys.stderr.flush()


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
