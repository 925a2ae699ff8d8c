"""Spark starts beside the driver's reads: its session comes with warm Python workers, and
a start the driver outran is stopped without a JVM left behind or a line in the logs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sluice.runtime.spark_start import SparkStart

WARM = "sluice.snapshot.split_reader"


def _imported(_partition: object) -> bool:
    return WARM in sys.modules


def test_the_session_comes_with_workers_that_imported_the_reader():
    ready = []
    start = SparkStart("spark-start-warm", "local[2]", slots=2, warm_modules=[WARM], on_ready=ready.append)
    assert not start.is_ready()
    session = start.session()
    try:
        assert start.is_ready() and ready == [session]
        assert session.sparkContext.parallelize(range(2), 2).map(_imported).collect() == [True, True]
    finally:
        start.stop()


OUTRUN = """
import logging, os, subprocess, sys, time
logging.basicConfig(level=logging.INFO)
from sluice.runtime.spark_start import SparkStart

def jvms():
    ps = subprocess.run(["ps", "-o", "comm=", "--ppid", str(os.getpid())], capture_output=True, text=True)
    return [name for name in ps.stdout.split() if name == "java"]

start = SparkStart("spark-start-outran", "local[1]", 1, ["sluice.snapshot.split_reader"], lambda _: None)
deadline = time.monotonic() + 60
while not jvms():
    assert time.monotonic() < deadline, "the JVM did not start"
    time.sleep(0.05)
time.sleep(float(sys.argv[1]))  # into its start: before or after Py4J's gateway is up
start.stop()
deadline = time.monotonic() + 120  # a loaded machine (CI's two workers) may take a minute to bring the gateway up
while jvms():  # killed at once, or as soon as the gateway is up
    assert time.monotonic() < deadline, "the JVM was left running"
    time.sleep(0.05)
while not start.is_ready():  # the start thread ends too, and logs nothing
    assert time.monotonic() < deadline
    time.sleep(0.05)
print("stopped")
"""


@pytest.mark.parametrize("into_the_start", [0.2, 3.0])
def test_a_start_the_driver_outran_is_stopped_without_a_jvm_left_or_a_log_line(into_the_start):
    """The CLI's case: the driver read every split while Spark was still starting."""
    run = subprocess.run(
        [sys.executable, "-c", OUTRUN, str(into_the_start)], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and run.stdout.strip() == "stopped", run.stderr
    logged = [line for line in run.stderr.splitlines() if line.startswith(("ERROR", "WARNING:root", "INFO:root"))]
    assert logged == [], run.stderr
    assert "Exception" not in run.stderr and "Traceback" not in run.stderr, run.stderr
