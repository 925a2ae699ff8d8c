"""The binlog split reader's emit side (Flink CDC's BinlogSplitReader and its shouldEmit):
per captured table the schema its rows are decoded with, the key order the emit rule
compares in and the projection onto the target's columns; each transaction's rows pass the
emit rule, are made whole where a session's row image left columns out, and join the batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sluice.binlog.binlog_split import BinlogSplit
from sluice.binlog.emit_rule import emit
from sluice.binlog.rows.image_completion import ImageCompletion, TargetNeeds
from sluice.binlog.transaction_reader import Transaction
from sluice.event.projection import projection
from sluice.event.row_change import ChangeBatch, ChangeRow
from sluice.source.endpoint import SourceEndpoint
from sluice.source.key_order import key_order_for
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema


class BinlogSplitReader:
    """Turns the binlog's transactions into the changelog rows the target is due."""

    def __init__(
        self,
        sources: Mapping[str, TableSchema],
        targets: Mapping[str, TableSchema],
        control,  # noqa: ANN001 - a pymysql connection: collations for the key order
        endpoint: SourceEndpoint,
        needs: TargetNeeds,
    ) -> None:
        self._control = control
        self.schemas: dict[str, TableSchema] = {}
        self.targets: dict[str, TableSchema] = {}
        self.decoders: dict[str, RowDecoder] = {}
        self.orders: dict[str, Any] = {}
        self.projections: dict[str, Callable[[Row], Row] | None] = {}
        # Per table, the slots an update's before image needs: its row key's where the
        # target needs no more of it (TargetNeeds), else None (all of them).
        self.before_only: dict[str, frozenset[int] | None] = {}
        self.needs = needs
        self.completion = ImageCompletion(endpoint, needs)
        self.update(sources, targets)

    def reconnect(self, control) -> None:  # noqa: ANN001
        self._control = control

    def update(self, sources: Mapping[str, TableSchema], targets: Mapping[str, TableSchema]) -> None:
        """The schemas from a schema change on: rows decoded with `sources`, projected onto `targets`."""
        for table_id, schema in sources.items():
            target = targets.get(table_id, schema)
            if self.schemas.get(table_id) == schema and self.targets.get(table_id) == target:
                continue
            self.decoders[table_id] = RowDecoder(schema)
            self.orders[table_id] = key_order_for(schema.column(schema.chunk_key), self._control)
            self.projections[table_id] = projection(schema, target)
            self.targets[table_id] = target
            keyed = schema.row_key and not self.needs.changelog and not self.needs.transformed(table_id)
            self.before_only[table_id] = frozenset(map(schema.position, schema.row_key)) if keyed else None
        self.schemas = dict(sources)

    def emit(self, transaction: Transaction, split: BinlogSplit, batch: ChangeBatch) -> None:
        """Applies the emit rule per run of same-table changes, keeping binlog order."""
        for table_id, events in transaction.table_runs():
            schema = self.schemas[table_id]
            watermarks = split.watermarks.get(table_id)
            partial = [event.is_partial for event in events]
            if watermarks is None and not any(partial):  # past every chunk's high watermark: every change is due
                before_only = self.before_only[table_id]
                rows = [row for event in events for row in event.changelog(schema, before_only)]
            else:
                changes = [
                    change
                    for event, left_out in zip(events, partial, strict=True)
                    for change in (self.completion.complete(event) if left_out else event.changes())
                ]
                if watermarks is None:
                    rows = [row for change in changes for row in change.changelog(schema)]
                else:
                    rows = emit(changes, watermarks, self.decoders[table_id], self.orders[table_id], schema)
            project = self.projections[table_id]
            if project is not None:
                target = self.targets[table_id]
                rows = [ChangeRow(target, kind, project(row), ts, offset) for _, kind, row, ts, offset in rows]
            batch.extend(rows)

    def close(self) -> None:
        self.completion.close()
