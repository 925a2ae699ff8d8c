"""The pause for a schema change, as the local runner drives it: the binlog phase has
committed everything before the DDL; the coordinator moves the change through its steps
from the one the state recorded (so a rerun after a crash goes on where it stopped); the
sink's metadata applier changes the target; reading resumes after the DDL with the new
schemas. Every step is in the state before the next begins."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

from sluice.binlog.binlog_split import BinlogSplit
from sluice.coordinator.schema_change import (
    Effects,
    SchemaChangeFailed,
    SchemaChangeHistory,
    SchemaChangeInFlight,
    Step,
    change_id,
    coordinate,
    short_statement,
)
from sluice.errors import SchemaDrift, SluiceError
from sluice.event.row_change import ChangeBatch
from sluice.event.schema_change import (
    CreateTable,
    DropTable,
    RenameTable,
    SchemaChange,
    SchemaChangeEvent,
    SchemaEvolution,
)
from sluice.failpoints import failpoint
from sluice.runtime.binlog_streaming import Resumed
from sluice.runtime.progress import BinlogProgress
from sluice.runtime.run_context import RunContext
from sluice.sink.base import SchemaChangeRefused, SinkWriter
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema
from sluice.state.pipeline_state import PipelineState
from sluice.state.state_store import StateStore

log = logging.getLogger(__name__)

APPROVAL_POLL_SECONDS = 1.0  # how often a waiting `manual` change reads the approvals again


def _renamed_into_the_capture(events: Sequence[SchemaChangeEvent], known: Collection[str]) -> list[RenameTable]:
    """The renames of tables the capture did not have, judged clause by clause (`RENAME
    TABLE a1 TO a2, a2 TO a3` moves a captured table twice). Such a table is new to the
    target: it joins the capture after the change, with a snapshot of its own."""
    present, joined = set(known), []
    for event in events:
        if isinstance(event, RenameTable) and event.table_id not in present:
            joined.append(event)
        elif isinstance(event, RenameTable):
            present.discard(event.table_id)
            present.add(event.new_table_id)
        elif isinstance(event, CreateTable):
            present.add(event.table_id)
        elif isinstance(event, DropTable):
            present.discard(event.table_id)
    return joined


def _described(change: SchemaChange, reread: Sequence[str]) -> str:
    described = ", ".join(map(str, change.events))
    if reread:
        described += (", and " if described else "") + f"rows of {', '.join(reread)} "
        described += "changed without row events: read again after it"
    if change.undecided:
        described += f"; {change.undecided}: it waits for approval as read"
    return described


class SchemaChangeHandler:
    def __init__(
        self,
        context: RunContext,
        writer: SinkWriter,
        progress: BinlogProgress,
        approvals: Callable[[], Collection[str]],
        after_resume: Callable[[BinlogSplit], bool],
        reread: Callable[[Sequence[str]], int] | None = None,
    ) -> None:
        self.definition = context.definition
        self.context = context  # its state and store, and whether the run is stopping
        self.writer = writer
        self.progress = progress
        self.approvals = approvals  # asked again while a `manual` change waits
        # What waits on the new schemas: tables renamed into the capture (state.joining:
        # snapshotted, then read from the DDL on, so it says True), deferred splits.
        self.after_resume = after_resume
        # Reads tables again, range by range, into the target as of its position (a sink
        # that cannot: None). For DDL that changes rows without row events.
        self.reread = reread
        self._tracked: SchemaChange | None = None  # the change being resolved, for _keep_track at its end

    @property
    def state(self) -> PipelineState:
        return self.context.state

    @property
    def store(self) -> StateStore:
        return self.context.store

    def handle(self, change: SchemaChange, split: BinlogSplit) -> Resumed | None:
        """Resolves `change` and moves `split` past it; None when the pipeline stops while
        the change waits for approval. Raises SluiceError where the pipeline stops before it."""
        known = self.state.tables or {}
        if not change.events and (change.unread or change.settled or change.migrations is not None):
            self._keep_track(change)  # what the reader must know after a restart; nothing to apply
            self.store.save(self.state)
            return Resumed(known, self.state.targets)
        self._tracked = change
        joined = _renamed_into_the_capture(change.events, known)
        joining = [e.new_table_id for e in joined]
        events = tuple(e for e in change.events if e not in joined)
        undecided = bool(change.undecided)
        reread = self._tables_to_read_again(change, split, events)
        inflight = self.state.schema_change
        if inflight is None or inflight.position != change.position:
            inflight = SchemaChangeInFlight(
                change_id(change.position), change.position, change.resume_at, change.statement, events
            )
            inflight.reread = reread
            self._record(inflight)
        what = f"schema change {inflight.id} ({short_statement(change.statement)})"
        self.progress.note(f"{what}: paused, everything before it committed; {_described(change, reread)}")
        if not self._coordinate(inflight, what, undecided):
            return None
        resumed = self._resume(inflight, split, joining)
        read_again = self.after_resume(split)
        self.progress.note(f"{what}: resumed after it")
        return Resumed(self.state.tables or {}, self.state.targets, read_again) if read_again else resumed

    def _tables_to_read_again(
        self, change: SchemaChange, split: BinlogSplit, events: tuple[SchemaChangeEvent, ...]
    ) -> tuple[str, ...]:
        """The tables whose rows the change changed without row events, where they can be read again."""
        reread = change.reread if self.definition.schema_change_behavior != "ignore" else ()
        # Not under lenient: a table read again would lose what the target keeps of the
        # columns the source dropped or renamed.
        if self.definition.schema_change_behavior in ("evolve", "try_evolve"):
            known = self.state.tables or {}
            reread = (
                *reread,
                *(t for t in self.writer.rereads_after(SchemaEvolution(known, events)) if t not in reread),
            )
        why_not = self._why_not_rereadable(change, split) if reread else ""
        if why_not and not change.relaid:
            raise SluiceError(
                f"{short_statement(change.statement)} changes the rows of {', '.join(change.reread)} without row "
                f"events in the binlog, and {why_not}; take a new snapshot after it (a new --state-dir), or set "
                "schema.change.behavior ignore to go on"
            )
        if why_not:  # a table map's change may have given the rows there values: where they cannot be read again
            self.progress.note(
                f"schema change at {change.position}: rows of {', '.join(change.reread)} keep their old values in "
                f"the target's new or retyped columns until they change ({why_not})"
            )
            return ()
        return tuple(reread)

    def _coordinate(self, inflight: SchemaChangeInFlight, what: str, undecided: bool) -> bool:
        """The change through its steps to the end; False if the pipeline stopped while it
        waited for approval. `undecided`: the table map left it open, so it waits for approval."""
        targets = self.state.targets
        effects = Effects(
            record=self._record,
            apply=lambda events: self._apply(inflight.id, events, targets),
            approved=self.approvals,
            wait=lambda: not self.context.stopping.wait(APPROVAL_POLL_SECONDS),
        )
        behavior, accepted = self.definition.schema_change_behavior, self.definition.accepted_schema_changes
        if undecided and behavior != "ignore":
            behavior = "manual"
        try:
            if not coordinate(inflight, behavior, targets, effects, accepted):
                self.progress.note(f"{what}: stopped while waiting for approval")
                return False
        except SchemaChangeFailed as exc:
            raise SluiceError(f"{what}: {exc}; the pipeline stopped before it, with all before it committed") from exc
        if inflight.step is Step.APPLIED:
            self.progress.note(f"{what}: applied to the target: {', '.join(map(str, inflight.target_events))}")
        else:
            self.progress.note(f"{what}: {inflight.step.value.lower()}: {inflight.message}")
        return True

    def _why_not_rereadable(self, change: SchemaChange, split: BinlogSplit) -> str:
        """A table is read again only into a sink that can, into a target of its own where
        the DDL may have removed rows (they are found by range; a table map's change only
        gave values), and once its snapshot's emit rule is done with it (a range read as of
        after the DDL would skip changes the rule drops)."""
        if self.reread is None:
            return f"sink {self.definition.sink.name} cannot read a table again"
        unreplaceable = {} if change.relaid else self.writer.ranges_not_replaceable()
        unreplaceable = {t: why for t, why in unreplaceable.items() if t in change.reread}
        if unreplaceable:
            return (
                "; ".join(f"{t} {why}" for t, why in unreplaceable.items())
                + ": rows the statement removed cannot be found by reading it again"
            )
        marks = split.watermarks
        switching = [t for t in change.reread if t in marks and change.resume_at.is_before(marks[t].max_high_watermark)]
        return f"{', '.join(switching)} still switch from snapshot to binlog" if switching else ""

    def finish_after_crash(self, split: BinlogSplit, committed: BinlogOffset | None) -> None:
        """A crash after the target took the change's resume offset and before the state
        said so: the reader starts past the DDL, so the change is finished first."""
        inflight = self.state.schema_change
        if inflight is None or not inflight.paused or committed is None or committed.is_before(inflight.resume_at):
            return
        if inflight.step is Step.APPLYING:
            inflight.advance(Step.APPLIED)
        self._resume(inflight, split)

    def _record(self, inflight: SchemaChangeInFlight) -> None:
        self.state.schema_change = inflight
        self.state.phase = "SchemaChangePaused" if inflight.paused else "Failed"
        self.store.save(self.state)
        self.progress.schema_change(inflight.step)
        failpoint(f"schema-change:{inflight.step.value}")

    def _apply(
        self, change: str, events: tuple[SchemaChangeEvent, ...], targets: dict[str, TableSchema]
    ) -> tuple[int, str]:
        try:
            self.writer.apply_schema_change(change, SchemaEvolution(targets, events))
        except SchemaChangeRefused as exc:
            return exc.applied, str(exc)
        failpoint("schema-change:applied-to-target")
        return len(events), ""

    def _keep_track(self, change: SchemaChange) -> None:
        """The tables whose layout waits for a table map, and the online schema changes in
        progress, as of after `change`: a reader started again starts from them."""
        self.state.unread = list(change.waiting)
        if change.migrations is not None:
            self.state.migrations = dict(change.migrations)

    def _reread_due(self, inflight: SchemaChangeInFlight) -> None:
        """Reads again, each range replacing the target's, the tables this change gave rows
        without row events, and those an earlier change did whose reading met a later
        layout than its own (SchemaDrift: it is read once the table's last change is
        through). Runs again after a crash: the ranges replace, so twice is exact."""
        changed = {e.table_id for e in inflight.events}
        due = [*inflight.reread, *(t for t in self.state.rereading if t in changed and t not in inflight.reread)]
        if not due or self.reread is None:
            return
        waiting = []
        for table_id in due:
            if table_id not in (self.state.tables or {}):
                continue  # gone since
            try:
                rows = self.reread([table_id])
            except SchemaDrift:
                waiting.append(table_id)
                self.progress.note(
                    f"schema change {inflight.id}: {table_id} changed again later in the binlog: it is read again "
                    "once its last change is through"
                )
                continue
            self.progress.note(f"schema change {inflight.id}: {table_id} read again ({rows:,} rows)")
        self.state.rereading = [*waiting, *(t for t in self.state.rereading if t not in due)]

    def _resume(self, inflight: SchemaChangeInFlight, split: BinlogSplit, joined: Sequence[str] = ()) -> Resumed:
        """Past the DDL with the new schemas: the target's offset, then the state, in that
        order (a crash between the two is `finish_after_crash`'s)."""
        sources, targets = inflight.schemas_after(self.state.tables or {}, self.state.targets)
        entered = split.advance(inflight.resume_at)
        self.writer.prepare_changes(ChangeBatch(), inflight.resume_at)(bool(entered) and not split.watermarks).wait()
        failpoint("schema-change:target-resumed")
        self.state.tables = sources  # what the tables are read again with (saved below)
        self.state.target_tables = None if targets == sources else targets
        self._reread_due(inflight)
        inflight.advance(Step.RESUMED, inflight.message)  # why it resumed as it did stays in the history
        history = SchemaChangeHistory(self.state.schema_change_history)
        history.record(inflight)
        self.state.schema_change_history = history.entries
        self.state.schema_change = None
        self.state.phase = "Streaming"
        self.state.binlog = split
        self.state.joining = [*self.state.joining, *joined]
        if self._tracked is not None:
            self._keep_track(self._tracked)
            self._tracked = None
        self.store.save(self.state)
        failpoint("schema-change:Resumed")
        return Resumed(sources, targets)
