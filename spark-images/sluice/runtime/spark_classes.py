"""Class data sharing for the local Spark JVM (the JDK's AppCDS): an archive of the classes
a session loads, mapped at start instead of loaded, parsed and verified one by one. On two
cores it starts a local session in about 4 s where it took 7 s: a local run whose splits
all wait for Spark (`scan.snapshot.read-on-driver: false`) uses it. `make install` makes it
(`python -m sluice.runtime.spark_classes`); without it, or with a JVM or PySpark other
than the one it was made by (the name says which), the JVM loads its classes as ever. A
SparkApplication's driver (spark-submit on Kubernetes) takes its classpath from the image,
so only local sessions use it."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pyspark
from pyspark import SparkContext


def archive() -> Path:
    """Where this interpreter's PySpark and the `java` on PATH (or JAVA_HOME's) keep theirs."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java") or "java"
    jvm = hashlib.sha256(os.path.realpath(java).encode()).hexdigest()[:12]
    return Path(sys.prefix) / "share" / "sluice" / f"spark-{pyspark.__version__}-{jvm}.jsa"


def java_option(local: bool) -> str:
    """The JVM option that maps the archive, where there is one to map."""
    path = archive()
    return f"-XX:SharedArchiveFile={path}" if local and path.is_file() else ""


def make_archive() -> Path:
    """Starts a local session that runs a job, and has its JVM write the classes it loaded
    when it exits (written aside, then moved into place: a run meanwhile sees none)."""
    from sluice.runtime.spark_session import spark_session

    path = archive()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    session = spark_session("sluice-class-archive", "local[2]", f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds=off")
    session.sparkContext.parallelize(range(2), 2).map(lambda n: n).collect()
    process = SparkContext._gateway.proc  # type: ignore[union-attr]
    session.stop()
    process.stdin.close()  # the gateway's JVM exits when its Python driver goes
    if process.wait(timeout=300) != 0 or not partial.is_file():
        raise SystemExit(f"the JVM wrote no class archive (exit {process.returncode})")
    partial.replace(path)
    return path


if __name__ == "__main__":
    print(f"Spark's class archive: {make_archive()}")
