"""What a pipeline has done so far, as one typed, versioned value: the enumerator's plan and
finished splits, the binlog split, the schemas, the schema change in flight and its
history. A StateStore keeps it: the local state directory here, the CdcPipeline's status
on Kubernetes. Its JSON form is the same for both."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.binlog.binlog_split import BinlogSplit
from sluice.coordinator.schema_change import SchemaChangeInFlight
from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema

STATE_VERSION = 1


@dataclass
class PipelineState:
    pipeline: str
    definition: dict[str, str]  # the definition's state identity it belongs to
    tables: dict[str, TableSchema] | None = None  # the source's schemas, as of the binlog position
    target_tables: dict[str, TableSchema] | None = None  # the target's, where a schema change left them other
    snapshot: SnapshotAssignerState | None = None  # until the binlog reader is past every high watermark
    snapshot_summary: dict[str, Any] | None = None  # splits and rows (and per table), once the plan is dropped
    adding_tables: list[str] = field(default_factory=list)  # tables added to a streaming pipeline, being snapshotted
    joining: list[str] = field(default_factory=list)  # tables renamed into `tables`, to snapshot where the DDL was
    rereading: list[str] = field(default_factory=list)  # tables to read again after their next schema change
    migrations: dict[str, Any] = field(default_factory=dict)  # gh-ost/pt-osc migrations before their cut-over
    unread: list[str] = field(default_factory=list)  # tables a statement that could not be read changed
    binlog: BinlogSplit | None = None
    stop_at: BinlogOffset | None = None  # a bounded run's end (scan.startup.mode snapshot)
    schema_change: SchemaChangeInFlight | None = None
    schema_change_history: list[dict[str, Any]] = field(default_factory=list)
    phase: str = ""  # SchemaChangePaused, Streaming, Failed; empty before the binlog phase
    revision: int = 0  # of the copy kept in the target (state/target_records.py)

    @property
    def targets(self) -> dict[str, TableSchema]:
        return self.target_tables if self.target_tables is not None else dict(self.tables or {})

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"version": STATE_VERSION, "pipeline": self.pipeline, "definition": self.definition}
        optional: dict[str, Any] = {
            "tables": _schemas_json(self.tables),
            "target_tables": _schemas_json(self.target_tables),
            "snapshot": self.snapshot.to_json() if self.snapshot else None,
            "snapshot_summary": self.snapshot_summary,
            "adding_tables": self.adding_tables or None,
            "joining": self.joining or None,
            "rereading": self.rereading or None,
            "migrations": self.migrations or None,
            "unread": self.unread or None,
            "binlog": self.binlog.to_json() if self.binlog else None,
            "stop_at": self.stop_at.to_json() if self.stop_at else None,
            "schema_change": self.schema_change.to_json() if self.schema_change else None,
            "schema_change_history": self.schema_change_history or None,
            "phase": self.phase or None,
            "revision": self.revision or None,
        }
        data.update({key: value for key, value in optional.items() if value is not None})
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PipelineState:
        return cls(
            pipeline=data["pipeline"],
            definition=dict(data.get("definition", {})),
            tables=_schemas(data.get("tables")),
            target_tables=_schemas(data.get("target_tables")),
            snapshot=SnapshotAssignerState.from_json(data["snapshot"]) if "snapshot" in data else None,
            snapshot_summary=data.get("snapshot_summary"),
            adding_tables=list(data.get("adding_tables", [])),
            joining=list(data.get("joining", [])),
            rereading=list(data.get("rereading", [])),
            migrations=dict(data.get("migrations", {})),
            unread=list(data.get("unread", [])),
            binlog=BinlogSplit.from_json(data["binlog"]) if "binlog" in data else None,
            stop_at=BinlogOffset.from_json(data["stop_at"]) if "stop_at" in data else None,
            schema_change=SchemaChangeInFlight.from_json(data["schema_change"]) if "schema_change" in data else None,
            schema_change_history=list(data.get("schema_change_history", [])),
            phase=data.get("phase", ""),
            revision=int(data.get("revision", 0)),
        )


def _schemas_json(schemas: Mapping[str, TableSchema] | None) -> dict[str, Any] | None:
    return None if schemas is None else {t: s.to_json() for t, s in schemas.items()}


def _schemas(data: Mapping[str, Any] | None) -> dict[str, TableSchema] | None:
    return None if data is None else {t: TableSchema.from_json(s) for t, s in data.items()}
