"""What a run's steps share (as the Flink Kubernetes Operator's FlinkResourceContext is
passed between its reconcilers): the definition, the source, the sink, where the state is
kept and the state as it is now, the metrics, and the stop signal."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from sluice.pipeline.definition import PipelineDefinition
from sluice.runtime.pipeline_metrics import PipelineMetrics
from sluice.sink.base import Sink
from sluice.source.endpoint import SourceEndpoint
from sluice.state.pipeline_state import PipelineState
from sluice.state.state_store import StateStore


@dataclass
class RunContext:
    definition: PipelineDefinition
    endpoint: SourceEndpoint
    sink: Sink
    store: StateStore
    state: PipelineState  # replaced when the run adopts a saved state, or reads the snapshot afresh
    metrics: PipelineMetrics
    master: str | None = None  # local Spark's; None where spark-submit gave one
    stopping: threading.Event = field(default_factory=threading.Event)

    def save(self) -> None:
        self.store.save(self.state)
