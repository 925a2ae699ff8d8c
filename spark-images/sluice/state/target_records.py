"""The target is the truth; the state directory or the CdcPipeline's status is a cache of it.

A state directory on an ephemeral disk, a CdcPipeline deleted and applied again (an Argo CD
prune and re-sync), a status reset by a backup tool: each loses the state while the target
keeps every row it was given. So every save of the state also goes into the target
(`sluice_meta.states` of a jdbc sink), next to the records the sink commits with its data
(finished chunks and the binlog position, in `sluice_meta.offsets`). A run that finds no
state, or one older than the target's, adopts the target's: it streams on from the
committed position with no snapshot, or reads only the chunks the target lacks, exactly as
a rerun with its state intact would. A state that belongs to another definition is refused
by the runner's identity check, naming the key and both values.

What changes at every binlog commit (the position) is already in the target, committed with
the rows: a save that changes nothing else writes nothing more into it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from sluice.snapshot.snapshot_split_assigner import FinishedSplit
from sluice.source.offset import BinlogOffset
from sluice.state.compact_state import compact, expand
from sluice.state.pipeline_state import PipelineState
from sluice.state.state_store import StateStore

log = logging.getLogger(__name__)


class StateRecords(Protocol):
    """What a sink keeps of the state (Sink.recorded_state, Sink.record_state)."""

    def recorded_state(self) -> tuple[int, dict[str, Any]] | None: ...

    def record_state(self, revision: int, document: dict[str, Any]) -> None: ...


class TargetRecordedStore(StateStore):
    def __init__(self, cache: StateStore, sink: StateRecords, target: str) -> None:
        """`cache`: the state directory or the status; `target`: how messages name the sink."""
        self.cache, self.sink, self.target = cache, sink, target
        self.where, self.fresh_start = cache.where, cache.fresh_start
        self._recorded: dict[str, Any] | None = None  # the document last put into the target

    def load(self) -> PipelineState | None:
        state = self.cache.load()
        recorded = self.sink.recorded_state()
        if recorded is None:
            return state
        revision, document = recorded
        if state is not None and state.revision >= revision:
            self._recorded = _without_position(state.to_json())
            return state
        adopted = PipelineState.from_json(expand(document))
        what = "no state" if state is None else f"an older state (revision {state.revision} < {revision})"
        self.where = f"the records of pipeline '{adopted.pipeline}' in sink {self.target}"
        self.fresh_start = "give the pipeline a new pipeline.name (the target keeps the old one's records)"
        log.warning("%s has %s: adopting %s (revision %d)", self.cache.where, what, self.where, revision)
        self._recorded = _without_position(adopted.to_json())
        self.cache.save(adopted)
        self.cache.report_adoption(f"{self.cache.where} had {what}: adopted {self.where}{_where_it_was(adopted)}")
        return adopted

    def save(self, state: PipelineState) -> None:
        document = state.to_json()
        if _without_position(document) != self._recorded:
            state.revision += 1
            document["revision"] = state.revision
            self.sink.record_state(state.revision, compact(document))
            self._recorded = _without_position(document)
        self.cache.save(state)

    def record_split_finished(self, split_id: str, finished: FinishedSplit) -> None:
        self.cache.record_split_finished(split_id, finished)

    def record_binlog_offset(self, offset: BinlogOffset) -> None:
        self.cache.record_binlog_offset(offset)

    def record_lag(self, seconds: float) -> None:
        self.cache.record_lag(seconds)


def _where_it_was(state: PipelineState) -> str:
    if state.binlog is not None:
        return f", streaming from {state.binlog.offset}"
    if state.snapshot is not None:
        return f", {len(state.snapshot.finished)} of {len(state.snapshot.splits)} snapshot splits recorded"
    return ""


def _without_position(document: dict[str, Any]) -> dict[str, Any]:
    """The document less what the sink commits with the rows anyway (and the revision)."""
    binlog = document.get("binlog")
    rest = {k: v for k, v in document.items() if k != "revision"}
    if binlog is not None:
        rest["binlog"] = {k: v for k, v in binlog.items() if k != "offset"}
    return rest
