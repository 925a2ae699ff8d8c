"""What a value a target cannot hold becomes: a NUL character in a string is removed for
PostgreSQL by default, replaced where sink.nul-replacement says, and kept where the
target holds it."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from sluice.errors import SinkError
from sluice.sink.target_values import TargetValues
from sluice.source.row_decoding import InvalidDate
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
    assert TargetValues("", None).rows(SCHEMA, [row]).__iter__().__next__() == (1, "ab", b"\0")
    assert list(TargetValues("\ufffd", None).rows(SCHEMA, [row])) == [(1, "a\ufffdb", b"\0")]
    assert list(TargetValues(None, None).rows(SCHEMA, [row])) == [row]
    assert (
        TargetValues("", None).for_table(TableSchema("app", "n", (Column("id", "int", "int", False),), ("id",), "id"))
        is None
    )


def test_dates_no_calendar_has_are_null_where_nullable_and_the_epoch_where_not_or_as_configured():
    schema = TableSchema(
        "app",
        "t",
        (
            Column("id", "int", "int", False),
            Column("d", "date", "date", False),
            Column("dt", "datetime", "datetime", True),
        ),
        ("id",),
        "id",
    )
    row = (7, InvalidDate("0000-00-00"), InvalidDate("2020-00-15 10:00:00"))
    assert list(TargetValues(None, "").rows(schema, [row])) == [(7, date(1970, 1, 1), None)]
    assert list(TargetValues(None, "1900-01-01").rows(schema, [row])) == [(7, date(1900, 1, 1), datetime(1900, 1, 1))]
    assert list(TargetValues(None, None).rows(schema, [row])) == [row]  # a MySQL-dialect target keeps them
    with pytest.raises(SinkError, match=r"app\.t\.d holds '0000-00-00' at id=7, a date no calendar has"):
        list(TargetValues(None, "fail").rows(schema, [row]))


class _CopyText:
    """Rows that come as COPY text too, as a chunk scan's do."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __iter__(self):
        return iter([tuple(line.split("\t")) for line in self.lines])

    @property
    def has_copy_text(self) -> bool:
        return True

    def copy_text(self):
        yield "\n".join(self.lines) + "\n"


def test_surrogates_pair_into_their_character_or_become_u_fffd_where_only_unicode_text_is_held():
    """MariaDB keeps a legacy client's CESU-8 (a character beyond the BMP as two surrogates)
    and lone surrogates; PostgreSQL, Arrow and Spark hold Unicode text only."""
    row = (1, "a\ud83d\ude00b\ud800", b"\xed\xa0\x80")
    assert list(TargetValues("", None).rows(SCHEMA, [row])) == [(1, "a\U0001f600b\ufffd", b"\xed\xa0\x80")]
    assert list(TargetValues(None, None).rows(SCHEMA, [row])) == [(1, "a\U0001f600b\ufffd", b"\xed\xa0\x80")]
    assert list(TargetValues(None, None, unicode_text=False).rows(SCHEMA, [row])) == [row]  # a MySQL target
    text = TargetValues("", None).rows(SCHEMA, _CopyText(["1\tx\\t\ud83d\ude00\\n\t\\\\x00", "2\tplain\t\\N"]))
    assert "".join(text.copy_text()) == "1\tx\\t\U0001f600\\n\t\\\\x00\n2\tplain\t\\N\n"
