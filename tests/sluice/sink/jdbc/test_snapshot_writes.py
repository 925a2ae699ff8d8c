"""Snapshot splits written side by side into a target that holds rows: each write clears its
key range and loads its rows in one transaction, and writes of adjacent ranges of one table,
from the driver's threads or from executors, run at once without deadlocking each other."""

from __future__ import annotations

import threading

from sluice.event.snapshot_split import SnapshotSplit, SplitRead
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.sink.jdbc.sink import JdbcSink
from sluice.source.offset import BinlogOffset

RANGES = 4
ROWS = 400  # keys a range holds


def test_adjacent_ranges_are_replaced_at_once_without_a_deadlock(target, table_t, source_db):
    schema = table_t
    target_options, target_rows = target
    sink = JdbcSink(JdbcSinkConfig.from_options(target_options), f"adjacent-{source_db}")
    sink.prepare([schema])

    def replace(index: int, round_: int) -> SplitRead:
        start, end = index * ROWS, (index + 1) * ROWS
        split = SnapshotSplit(schema.table_id, index, start or None, end if index + 1 < RANGES else None)
        rows = [(key, f"r{round_}") for key in range(start, end)]
        offset = BinlogOffset("mysql-bin.000001", 100 * round_ + index)
        return SplitRead(schema, rows, offset, lambda: [(split, len(rows))], split)

    failures: list[BaseException] = []

    def write(index: int) -> None:
        writer = sink.writer()
        try:
            for round_ in range(8):
                writer.write_snapshot_splits(replace(index, round_))
        except BaseException as exc:  # noqa: BLE001 - the assertion below names it
            failures.append(exc)
        finally:
            writer.close()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(RANGES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, f"a range's write failed: {failures[0]}"
    assert target_rows(source_db) == [(key, "r7") for key in range(RANGES * ROWS)]
