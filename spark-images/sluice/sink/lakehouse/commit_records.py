"""The pipeline's records in a lakehouse table's commits, read back: where the table's
last commit left the binlog reader, and whether a change of a batch is in the table already
(a batch replayed after a crash between two tables' commits skips what each holds)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sluice.sink.lakehouse.table_format import END
from sluice.source.gtid_state import contains
from sluice.source.offset import BinlogOffset


def recorded_end(records: Sequence[Mapping[str, str]]) -> BinlogOffset | None:
    """The end of the newest of a table's records that has one."""
    return next((BinlogOffset.from_json(json.loads(r[END])) for r in records if r.get(END)), None)


@dataclass(frozen=True)
class Held:
    """Which changes of a batch a table's commits hold already: all or none of them
    (`whole`), or those before the table's end."""

    whole: bool | None
    table_end: BinlogOffset | None = None

    def __call__(self, change: BinlogOffset) -> bool:
        if self.whole is not None:
            return self.whole
        return self.table_end is not None and change.is_before(self.table_end)


def held_already(batch_end: BinlogOffset, table_end: BinlogOffset | None) -> Held:
    """Whether the table's commits hold a change of a batch already, decided once a batch
    and table. By GTID sets where both ends have one and neither is inside a transaction
    (they mean the same on every server: after a failover a position on the promoted server
    says nothing of one on the old), the whole batch or none of it; else by position, on the
    one server a resume inside a transaction or without GTIDs reads. (A batch partly in and
    partly past the table's end is applied whole: a key's last image upserted again changes
    nothing.)"""
    if table_end is None:
        return Held(False)
    if batch_end.gtid and table_end.gtid and not (batch_end.transaction or table_end.transaction):
        return Held(contains(table_end.gtid, batch_end.gtid))
    return Held(None, table_end)
