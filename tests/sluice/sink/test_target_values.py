"""What a value a target cannot hold becomes: a NUL character in a string is removed for
PostgreSQL by default, replaced where sink.nul-replacement says, and kept where the
target holds it."""

from __future__ import annotations

from sluice.sink.target_values import TargetValues
from sluice.source.schema import Column, TableSchema

SCHEMA = TableSchema(
    "app",
    "t",
    (
        Column("id", "int", "int", False),
        Column("name", "varchar", "varchar(10)", True),
        Column("b", "blob", "blob", True),
    ),
    ("id",),
    "id",
)


def test_nul_characters_are_removed_replaced_or_kept():
    row = (1, "a\0b", b"\0")  # bytes hold NUL in every target
    assert TargetValues("").rows(SCHEMA, [row]).__iter__().__next__() == (1, "ab", b"\0")
    assert list(TargetValues("\ufffd").rows(SCHEMA, [row])) == [(1, "a\ufffdb", b"\0")]
    assert list(TargetValues(None).rows(SCHEMA, [row])) == [row]
    assert (
        TargetValues("").for_table(TableSchema("app", "n", (Column("id", "int", "int", False),), ("id",), "id")) is None
    )
