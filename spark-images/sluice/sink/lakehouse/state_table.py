"""The pipeline's state document kept in a lakehouse target: one row per pipeline of
`sluice_meta.states`, a table of the format's own (a run with no state adopts it, as from a
jdbc target's table of that name)."""

from __future__ import annotations

import json
from typing import Any

from sluice.errors import SinkError
from sluice.sink.arrow_rows import ArrowRows, arrow_schema, source_rows
from sluice.sink.jdbc.dialect import META_SCHEMA, STATES_TABLE
from sluice.sink.lakehouse.table_format import TableCommit, TableFormat
from sluice.sink.target_values import TargetValues
from sluice.source.schema import Column, TableSchema

STATES = TableSchema(
    META_SCHEMA,
    STATES_TABLE,
    (
        Column("pipeline", "varchar", "varchar(255)", False),
        Column("revision", "bigint", "bigint", False),
        Column("document", "longtext", "longtext", True),
    ),
    ("pipeline",),
    "pipeline",
)


def recorded_state(tables: TableFormat, pipeline: str) -> tuple[int, dict[str, Any]] | None:
    if not tables.exists(STATES.table_id):
        return None
    for name, revision, document in source_rows(STATES, tables.scan(STATES)):
        if name == pipeline:
            return int(revision), json.loads(document)
    return None


def record_state(tables: TableFormat, pipeline: str, values: TargetValues, revision: int, document: dict) -> None:
    row = (pipeline, revision, json.dumps(document, separators=(",", ":")))
    try:
        tables.create(STATES, arrow_schema(STATES))
        commit = TableCommit({}, STATES.row_key, [(pipeline,)], rows=ArrowRows(STATES, values).table([row]))
        tables.commit(STATES, commit, lambda _newest: None)  # one row per pipeline: nothing to fence
    except Exception as exc:
        raise SinkError(f"sink {tables.name}: keeping the pipeline's state failed: {exc}") from exc
