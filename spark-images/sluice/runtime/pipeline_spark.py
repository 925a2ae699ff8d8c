"""The run's Spark: started in the background where the snapshot needs it (the driver plans,
or reads splits, meanwhile), and stopped once the single binlog reader takes over, unless
the sink writes changes with Spark."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice.pipeline.definition import PipelineDefinition
from sluice.sink.base import Sink
from sluice.snapshot.split_reader import read_splits
from sluice.state.pipeline_state import PipelineState

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sluice.runtime.spark_start import SparkStart


class PipelineSpark:
    def __init__(self, definition: PipelineDefinition, master: str | None, sink: Sink) -> None:
        """`master`: local Spark's, None where spark-submit gave one."""
        self.definition, self.master, self.sink = definition, master, sink
        self._spark: SparkStart | None = None

    def start(self) -> SparkStart:
        """Spark starts in the background (the driver plans, or reads splits, meanwhile)."""
        if self._spark is None:
            from sluice.runtime.spark_classes import java_option
            from sluice.runtime.spark_start import SparkStart

            local = (self.master or "").startswith("local")
            self._spark = SparkStart(
                f"sluice-{self.definition.name}",
                self.master,
                slots=self.definition.parallelism,
                warm_modules=[read_splits.__module__, type(self.sink).__module__],
                on_ready=self.sink.attach,
                # Where the driver reads while Spark starts, a JVM up sooner only takes CPU from
                # those reads (measured: 8% slower end to end at 5M rows on two cores); where
                # every split waits for Spark, it starts 3 s sooner.
                java_options=java_option(local=local and not self.driver_reads),
                beside_reads=self.driver_reads,
            )
        return self._spark

    @property
    def driver_reads(self) -> bool:
        """The driver reads snapshot splits itself, at least while Spark starts."""
        return self.definition.source.read_on_driver and not self.sink.writes_changes_with_spark

    def snapshot_waits(self, state: PipelineState) -> bool:
        """Every split of a snapshot still to read waits for Spark: it starts before the plan."""
        if not self.definition.source.startup.takes_snapshot or self.driver_reads:
            return False
        if state.snapshot is None:
            return state.tables is None  # a plan is yet to be made
        return not state.snapshot.is_finished

    def session(self) -> SparkSession:
        return self.start().session()

    def stop(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None
