"""The emit rule (Flink CDC 2's BinlogSplitReader#shouldEmit, in the incremental snapshot
seed): a finished split holds its chunk as of its high watermark (hw), so a change of a row in
that chunk is emitted only from the hw on. Sluice's chunks cover the whole key space, so every
key has a chunk; an update whose key moves between chunks is judged side by side."""

from __future__ import annotations

from sluice.binlog.emit_rule import PENDING, TableWatermarks, emit
from sluice.event.row_change import RowChange, RowKind
from sluice.source.key_order import PythonKeyOrder
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import RowDecoder
from sluice.source.schema import Column, TableSchema

SCHEMA = TableSchema(
    "db", "t", (Column("id", "int", "int", True), Column("v", "varchar", "varchar(10)", True)), ("id",), "id"
)


def at(pos: int) -> BinlogOffset:
    return BinlogOffset("mysql-bin.000001", pos)


# Chunks [NULL, 100) with its hw at 1000, [100, 200) at 2000, [200, ...) at 3000.
WATERMARKS = TableWatermarks([100, 200], [at(1000), at(2000), at(3000)])


def insert(key: int | None, pos: int) -> RowChange:
    return RowChange(SCHEMA.table_id, RowKind.INSERT, None, (key, "new"), at(pos), 0)


def delete(key: int, pos: int) -> RowChange:
    return RowChange(SCHEMA.table_id, RowKind.DELETE, (key, "old"), None, at(pos), 0)


def update(before: int, after: int, pos: int) -> RowChange:
    return RowChange(SCHEMA.table_id, RowKind.UPDATE_AFTER, (before, "old"), (after, "new"), at(pos), 0)


def emitted(*changes: RowChange, watermarks: TableWatermarks = WATERMARKS) -> list[tuple[str, int, int]]:
    """(kind, key, position) of each changelog row emitted."""
    rows = emit(list(changes), watermarks, RowDecoder(SCHEMA), PythonKeyOrder(), SCHEMA)
    return [(row.kind.name, row.row[0], row.offset.pos) for row in rows]


def test_a_change_before_its_chunks_high_watermark_is_in_the_chunk_already():
    assert emitted(insert(150, 1999), delete(150, 1500), update(150, 160, 1000)) == []


def test_a_change_at_or_after_its_chunks_high_watermark_is_emitted_at_its_own_position():
    assert emitted(insert(150, 2000), delete(150, 2500)) == [("INSERT", 150, 2000), ("DELETE", 150, 2500)]


def test_each_chunk_has_its_own_high_watermark():
    changes = [insert(50, 1500), insert(150, 1500), insert(250, 1500)]
    assert emitted(*changes) == [("INSERT", 50, 1500)]


def test_an_update_within_a_chunk_is_emitted_whole_or_not_at_all():
    assert emitted(update(150, 160, 2000)) == [("UPDATE_BEFORE", 150, 2000), ("UPDATE_AFTER", 160, 2000)]
    assert emitted(update(150, 160, 1999)) == []


def test_an_update_moving_its_key_to_a_chunk_read_later_emits_only_the_delete_of_its_old_key():
    """The new key's chunk was read after the update: it holds the new row already."""
    assert emitted(update(50, 250, 1500)) == [("DELETE", 50, 1500)]


def test_an_update_moving_its_key_to_a_chunk_read_earlier_emits_only_the_insert_of_its_new_key():
    """The old key's chunk was read after the update: it never held the old row."""
    assert emitted(update(250, 50, 1500)) == [("INSERT", 50, 1500)]


def test_a_null_chunk_key_is_in_the_first_chunk_as_mysql_sorts_it():
    assert emitted(insert(None, 1000)) == [("INSERT", None, 1000)]
    assert emitted(insert(None, 999)) == []


def test_a_chunk_to_be_read_again_takes_every_change_of_its_keys_itself():
    pending = TableWatermarks([100], [at(1000), PENDING])
    assert emitted(insert(150, 10**9), update(50, 150, 5000), watermarks=pending) == [("DELETE", 50, 5000)]


def test_past_every_high_watermark_every_change_is_emitted():
    """The table is then in pure binlog phase: the reader drops its watermarks altogether."""
    changes = [insert(50, 3000), update(150, 250, 3001), delete(250, 3002)]
    assert emitted(*changes) == [
        ("INSERT", 50, 3000),
        ("UPDATE_BEFORE", 150, 3001),
        ("UPDATE_AFTER", 250, 3001),
        ("DELETE", 250, 3002),
    ]
