"""What one target takes of a source table's changes: an update that moves a row across
the filter deletes or inserts it there, one that changes the primary key is a delete and an
insert (as Flink CDC's MySQL source emits it), and SOFT_DELETE keeps a deleted row marked."""

from __future__ import annotations

from operator import itemgetter

from sluice.event.projection import projection
from sluice.event.row_change import ChangeRow, RowKind
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema
from sluice.transform.table_transform import TableTransform
from sluice.transform.target_rows import TargetRows
from sluice.transform.transform_rule import parse_transforms

ID = Column("id", "int", "int(11)", False)
NAME = Column("name", "varchar", "varchar(20)", True, char_length=20)
QTY = Column("qty", "int", "int(11)", True)
USERS = TableSchema("app", "users", (ID, NAME, QTY), ("id",), "id")
AT = BinlogOffset("mysql-bin.000001", 4)


def target_rows(rule: dict, schema: TableSchema = USERS) -> TargetRows:
    transform = TableTransform(parse_transforms([{"source-table": schema.table_id, **rule}])[0], schema)
    own = transform.target()
    key = itemgetter(*(schema.position(n) for n in schema.primary_key)) if schema.primary_key else (lambda row: ())
    return TargetRows(own, transform, None, key)


def update(rows: TargetRows, before: tuple, after: tuple) -> list[tuple[RowKind, tuple]]:
    pair = (
        ChangeRow(USERS, RowKind.UPDATE_BEFORE, before, 0, AT),
        ChangeRow(USERS, RowKind.UPDATE_AFTER, after, 0, AT),
    )
    return [(r.kind, r.row) for r in rows.update(*pair)]


def test_updates_moving_rows_across_the_filter_delete_and_insert_them():
    rows = target_rows({"filter": "qty > 10"})

    assert update(rows, (1, "a", 20), (1, "a", 5)) == [(RowKind.DELETE, (1, "a", 20))]
    assert update(rows, (1, "a", 5), (1, "a", 20)) == [(RowKind.INSERT, (1, "a", 20))]
    assert update(rows, (1, "a", 5), (1, "a", 6)) == []
    assert update(rows, (1, "a", 20), (1, "b", 30)) == [
        (RowKind.UPDATE_BEFORE, (1, "a", 20)),
        (RowKind.UPDATE_AFTER, (1, "b", 30)),
    ]
    assert rows.change(ChangeRow(USERS, RowKind.DELETE, (3, "a", 1), 0, AT), RowKind.DELETE) == []  # never let in
    assert list(rows.snapshot([(1, "a", 20), (2, "b", 3)])) == [(1, "a", 20)]


def test_an_update_that_changes_the_key_is_a_delete_and_an_insert_as_flink_cdcs_mysql_source_emits_it():
    rows = target_rows(
        {
            "projection": "id, name, qty, __data_event_type__ AS op",
            "filter": "qty > 10",
            "converter-after-transform": "SOFT_DELETE",
        }
    )
    # the old row stays, soft-deleted (-D); the new one comes in as an insert (+I)
    assert update(rows, (3, "a", 20), (7, "a", 20)) == [
        (RowKind.UPDATE_AFTER, (3, "a", 20, "-D")),
        (RowKind.INSERT, (7, "a", 20, "+I")),
    ]
    # each half meets the filter alone
    assert update(rows, (3, "a", 5), (7, "a", 20)) == [(RowKind.INSERT, (7, "a", 20, "+I"))]
    assert update(rows, (3, "a", 20), (7, "a", 5)) == [(RowKind.UPDATE_AFTER, (3, "a", 20, "-D"))]
    # the key kept: an update, as before
    assert update(rows, (3, "a", 20), (3, "b", 20)) == [
        (RowKind.UPDATE_BEFORE, (3, "a", 20, "-U")),
        (RowKind.UPDATE_AFTER, (3, "b", 20, "+U")),
    ]


def test_a_table_without_a_primary_key_has_no_key_to_change():
    keyless = TableSchema("app", "notes", (ID, NAME), (), "id")
    rows = target_rows({"projection": "id, name"}, keyless)
    pair = (
        ChangeRow(keyless, RowKind.UPDATE_BEFORE, (1, "a"), 0, AT),
        ChangeRow(keyless, RowKind.UPDATE_AFTER, (2, "b"), 0, AT),
    )
    assert [r.kind for r in rows.update(*pair)] == [RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER]


def test_a_soft_deleted_row_of_a_keyless_target_stays_as_it_is():
    keyless = TableSchema("app", "notes", (ID, NAME), (), "id")
    rows = target_rows({"projection": "id, name", "converter-after-transform": "SOFT_DELETE"}, keyless)
    assert rows.change(ChangeRow(keyless, RowKind.DELETE, (1, "a"), 0, AT), RowKind.DELETE) == []


def test_rows_without_a_transform_reach_the_target_in_its_columns():
    merged = TableSchema(
        "app", "all_users", (ID, NAME, QTY, Column("region", "varchar", "varchar(8)", True)), ("id",), "id"
    )
    rows = TargetRows(merged, None, projection(USERS, merged), itemgetter(0))
    insert = ChangeRow(USERS, RowKind.INSERT, (1, "a", 2), 0, AT)
    assert [(r.schema, r.kind, r.row) for r in rows.change(insert, RowKind.INSERT)] == [
        (merged, RowKind.INSERT, (1, "a", 2, None))
    ]
    assert list(rows.snapshot([(1, "a", 2)])) == [(1, "a", 2, None)]
