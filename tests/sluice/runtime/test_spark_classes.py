"""A local Spark JVM maps the class archive `make install` made (the JDK's AppCDS) instead of
loading each class from Spark's jars; a JVM other than the archive's gets no option."""

from __future__ import annotations

import subprocess
import sys

from sluice.runtime.spark_classes import archive, java_option

SESSION = """
import sys
from sluice.runtime.spark_classes import java_option
from sluice.runtime.spark_session import spark_session
options = java_option(local=True) + " -Xlog:class+load=info:file=" + sys.argv[1]
session = spark_session("class-archive", "local[1]", options)
session.sparkContext.parallelize(range(2), 1).count()
session.stop()
"""


def test_a_local_session_loads_spark_from_the_archive_make_install_made(tmp_path):
    assert archive().is_file(), "make install makes it: python -m sluice.runtime.spark_classes"
    assert java_option(local=True) == f"-XX:SharedArchiveFile={archive()}"
    assert java_option(local=False) == ""  # spark-submit's driver: the image's classpath
    log = tmp_path / "classes.log"
    subprocess.run([sys.executable, "-c", SESSION, str(log)], check=True, capture_output=True, timeout=300)
    spark = [line for line in log.read_text().splitlines() if "org.apache.spark.SparkContext " in line]
    assert spark and "shared objects file" in spark[0], spark  # mapped, not read from spark-core's jar


def test_another_jvm_gets_no_archive(monkeypatch, tmp_path):
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java_option(local=True) == ""
