"""Row images MySQL never writes (a flipped bit on disk, a proxy's fault, a hand-made table
map) are refused, by the compiled loop and the Python reference alike, with an error naming
the column; the rows event's stop names the table and the position. Nothing loops, reads
past the body or decodes a wrong value in their place."""

from __future__ import annotations

import multiprocessing
from types import SimpleNamespace

import pytest
from pymysqlreplication.constants import FIELD_TYPE

from sluice.binlog.rows import row_image_decoder
from sluice.binlog.rows.event_reader import RowsEvent
from sluice.binlog.rows.row_image_decoder import RowImageDecoder, changelog_rows
from sluice.errors import SourceError
from sluice.event.row_change import RowKind
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema


@pytest.fixture(autouse=True, params=["compiled", "python"])
def row_loop(request, monkeypatch):
    """Every case runs against both loops: the C one and its Python reference."""
    monkeypatch.setattr(row_image_decoder, "COMPILED", request.param == "compiled")
    return request.param


def table_map_column(name: str, kind: int, **metadata) -> SimpleNamespace:
    """A table map's column as python-mysql-replication reads it."""
    return SimpleNamespace(name=name, type=kind, unsigned=False, character_set_name=None, **metadata)


def decoder(*columns: tuple[SimpleNamespace, str, str]) -> RowImageDecoder:
    schema = TableSchema("app", "t", tuple(Column(c.name, t, ct, True) for c, t, ct in columns), (), None)
    return RowImageDecoder([c for c, _, _ in columns], schema)


def decoded(dec: RowImageDecoder, body: bytes, present: tuple[bytes, ...] = (b"\xff",)) -> list:
    return dec.images(body, present)


DATETIME_2021 = bytes.fromhex("99a9b66a1e")  # 2021-06-18 10:41:30 as DATETIME2(0)


def test_a_datetime_of_a_precision_past_six_is_refused_naming_its_column():
    column = table_map_column("at", FIELD_TYPE.DATETIME2, fsp=7)
    with pytest.raises(ValueError, match=r"column at: fractional seconds precision 7; MySQL writes at most 6"):
        decoded(decoder((column, "datetime", "datetime(6)")), b"\x00" + DATETIME_2021 + b"\x00\x00\x00\x00")


@pytest.mark.parametrize("kind", [FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.TIME2])
def test_timestamps_and_times_of_a_precision_past_six_are_refused(kind):
    column = table_map_column("at", kind, fsp=200)
    with pytest.raises(ValueError, match=r"column at: fractional seconds precision 200"):
        decoded(decoder((column, "timestamp", "timestamp(6)")), b"\x00" + bytes(120))


def test_a_decimal_digit_group_holding_more_digits_than_it_can_is_refused():
    column = table_map_column("amount", FIELD_TYPE.NEWDECIMAL, precision=4, decimals=2)
    dec = decoder((column, "decimal", "decimal(4,2)"))
    assert decoded(dec, b"\x00" + bytes.fromhex("8963")) == [(__import__("decimal").Decimal("9.99"),)]
    with pytest.raises(ValueError, match=r"column amount: a DECIMAL digit group of 127 holds at most 2 digits"):
        decoded(dec, b"\x00" + bytes.fromhex("e37f"))  # 0x63 = 99, then 0x7f = 127 in a two-digit group


def _decode_in_a_child(queue, body, present) -> None:  # noqa: ANN001
    dec = decoder((table_map_column("id", FIELD_TYPE.LONG), "int", "int"))
    try:
        queue.put(("rows", len(dec.images(body, present))))
    except ValueError as exc:
        queue.put(("refused", str(exc)))


def test_images_of_no_column_are_refused_not_read_for_ever(row_loop):
    """A column bitmap that selects none: each image is an empty null bitmap, which reads no
    byte of the body; read on, it would fill memory with empty rows."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(
        target=lambda: (
            row_image_decoder.__setattr__("COMPILED", row_loop == "compiled"),
            _decode_in_a_child(queue, b"\x00\x01\x00\x00\x00", (b"\x00",)),
        )
    )
    child.start()
    child.join(20)
    if child.is_alive():
        child.kill()
        pytest.fail("decoding images of no column did not end")
    outcome = queue.get(timeout=5)
    assert outcome[0] == "refused" and "reads no byte" in outcome[1], outcome


def test_a_length_past_the_body_is_refused_by_both_loops():
    column = table_map_column("name", FIELD_TYPE.VARCHAR, max_length=20)
    dec = decoder((column, "varchar", "varchar(20)"))
    assert decoded(dec, b"\x00\x02ab") == [("ab",)]
    with pytest.raises(ValueError, match=r"column name: row image ends before its value"):
        decoded(dec, b"\x00\x05ab")


def test_every_error_of_the_decode_step_is_the_rows_events_stop():
    """A corrupt compressed column (zlib.error) becomes the stop that names the event."""
    column = table_map_column("note", FIELD_TYPE.BLOB, length_size=2, compressed=True)
    dec = decoder((column, "blob", "blob"))
    event = RowsEvent(
        "app.t",
        RowKind.INSERT,
        dec,
        b"\x00\x04\x00\x88zzz",
        (b"\xff",),
        BinlogOffset("mysql-bin.000007", 4711),
        0,
        0,
        0,
    )
    with pytest.raises(
        SourceError,
        match=r"cannot decode the rows event of app\.t at binlog position "
        r"mysql-bin\.000007:4711.*column note",
    ):
        event.changelog(dec.schema)


def test_changelog_refuses_a_negative_first_row():
    with pytest.raises(ValueError, match="first row -1"):
        changelog_rows([(1,)], -1, object(), (RowKind.INSERT,), 0, BinlogOffset("mysql-bin.000001", 4))


def test_an_offset_with_a_negative_row_is_refused_when_read_from_state():
    with pytest.raises(ValueError, match="row"):
        BinlogOffset.from_json({"file": "mysql-bin.000001", "pos": 4, "row": -1})


def test_a_length_prefix_of_more_than_four_bytes_is_refused():
    """Found by the differential fuzz: a BLOB's table map saying a 66-byte length (MySQL
    writes 1 to 4) was refused by the C loop and read by the Python one."""
    column = table_map_column("doc", FIELD_TYPE.BLOB, length_size=66)
    with pytest.raises(ValueError, match=r"column doc: a length of 66 bytes; MySQL writes 1 to 4"):
        decoded(decoder((column, "blob", "blob")), b"\x00" + bytes(70))
