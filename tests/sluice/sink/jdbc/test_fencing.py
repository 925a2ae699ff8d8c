"""Fencing in the jdbc sink: once a newer run of a pipeline has started, a writer of an older
run (a zombie executor, a driver cut off from its pod) commits nothing, in either dialect."""

from __future__ import annotations

import pytest

from sluice.errors import SinkError
from sluice.event.row_change import ChangeBatch, ChangeRow, RowKind
from sluice.event.snapshot_split import SnapshotSplit, SplitRead
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.jdbc.sink import JdbcSink
from sluice.source.offset import BinlogOffset


def test_a_writer_of_an_older_run_is_fenced_off(target, table_t, source_db):
    schema = table_t
    target_options, target_rows = target
    options = {**target_options, "sink.batch-size": 100}
    split = SnapshotSplit(schema.table_id, 0, None, None)

    def read(rows: list[tuple], pos: int) -> SplitRead:
        return SplitRead(schema, rows, BinlogOffset("mysql-bin.000001", pos), lambda: [(split, len(rows))])

    old_run = JdbcSink(JdbcSinkConfig.from_options(options), f"fencing-{source_db}")
    old_run.prepare([schema])
    zombie = old_run.writer()
    zombie.write_snapshot_splits(read([(1, "old")], 100))

    new_run = JdbcSink(JdbcSinkConfig.from_options(options), f"fencing-{source_db}")
    new_run.prepare([schema])
    writer = new_run.writer()
    writer.write_snapshot_splits(read([(1, "new"), (2, "new")], 200))

    with pytest.raises(SinkError, match="fenced off"):
        zombie.write_snapshot_splits(read([(1, "stale")], 150))
    zombie = old_run.writer()
    change = ChangeRow(schema, RowKind.INSERT, (3, "stale"), 0, BinlogOffset("mysql-bin.000001", 300))
    with pytest.raises(SinkError, match="fenced off"):
        zombie.write_changes(ChangeBatch([change]), BinlogOffset("mysql-bin.000001", 400), False)
    writer.close()

    assert target_rows(source_db) == [(1, "new"), (2, "new")]
    assert new_run.committed_splits() == {split.split_id: BinlogOffset("mysql-bin.000001", 200)}
