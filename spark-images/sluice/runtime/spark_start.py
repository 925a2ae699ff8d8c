"""Starts Spark beside the driver's own work.

The session and a warm-up job run in a background thread: Spark's start (a JVM, seconds)
then overlaps the snapshot splits the driver reads meanwhile, and the first real job finds
Python workers that have already imported the split reader and the sink (the first job
otherwise pays about two seconds for that).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class SparkStart:
    def __init__(
        self,
        app_name: str,
        master: str | None,
        slots: int,
        warm_modules: Sequence[str],
        on_ready: Callable,
        java_options: str = "",
        beside_reads: bool = False,
    ) -> None:
        """`slots` Python workers import `warm_modules`; `on_ready` gets the session first.
        `beside_reads`: the driver reads splits on this machine while Spark starts."""
        self._app_name, self._master, self._java_options = app_name, master, java_options
        self._beside_reads = beside_reads
        self._slots, self._warm_modules, self._on_ready = slots, tuple(warm_modules), on_ready
        self._ready = threading.Event()
        self._abandoned = threading.Event()
        self._local = master is not None and master.startswith("local")
        self._session: SparkSession | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="spark-start", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        started = time.monotonic()
        if self._local and self._beside_reads and sys.platform.startswith("linux"):
            # The JVM's start (seconds of a core) would take the CPU from the driver's reads
            # on this same machine: it inherits this thread's lower priority (on Linux a
            # thread has a nice value of its own). Not otherwise: the executors' Python
            # workers, the JVM's children, would read at that priority too.
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            from sluice.runtime.spark_session import spark_session

            session = spark_session(self._app_name, self._master, self._java_options, quiet=self._abandoned)
            if self._abandoned.is_set():
                _kill_local_jvm()
                return
            sc = session.sparkContext
            sc.setJobDescription("warm up the Python workers")
            sc.parallelize(range(self._slots), self._slots).foreach(
                functools.partial(_import_modules, self._warm_modules)
            )
            self._on_ready(session)
            self._session = session
            log.info("Spark is ready after %.1f s, %d Python workers warm", time.monotonic() - started, self._slots)
        except BaseException as exc:  # noqa: BLE001 - raised where the session is asked for
            self._error = exc
        finally:
            self._ready.set()

    def is_ready(self) -> bool:
        return self._ready.is_set()

    def session(self) -> SparkSession:
        """Waits for the start; raises what failed it."""
        self._ready.wait()
        if self._error is not None:
            raise self._error
        assert self._session is not None
        return self._session

    def stop(self) -> None:
        """Stops a started session without waiting (SparkContext.stop() then waits a second
        on its accumulator server's poll loop). A local JVM still starting is killed: the
        driver read every split first, and its warm-up job would log its workers' end."""
        self._abandoned.set()
        if self._ready.is_set():
            if self._session is not None:
                threading.Thread(target=self._session.stop, name="spark-stop", daemon=True).start()
        elif self._local:
            _kill_local_jvm()


def _kill_local_jvm() -> None:
    """The JVM PySpark launched for a local session (its Python workers end with it)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is not None:
        # Py4J then reports the lost connection, on its own logger and on the root logger.
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
        logging.getLogger().addFilter(lambda record: not record.getMessage().startswith("Exception while sending"))
        process.kill()
        process.wait()
        SparkContext._gateway = SparkContext._jvm = None  # a later session launches its own


def _import_modules(modules: tuple[str, ...], _partition: object) -> None:
    for module in modules:
        importlib.import_module(module)
