"""A batch's changes fold to each key's last image, and count by table and kind. Every test
runs with both loops: the compiled one (C) and the Python one it is held to; a random batch
of every kind of change folds to the same images, new keys and counts in both."""

from __future__ import annotations

import random
from datetime import datetime
from decimal import Decimal

import pytest

from sluice.event import change_fold
from sluice.event.change_fold import fold_run, kind_counts
from sluice.event.row_change import ChangeRow, RowKind
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import InvalidDate
from sluice.source.schema import Column, TableSchema

AT = BinlogOffset("mysql-bin.000001", 4)


def table(name: str, key: tuple[str, ...] = ("id",)) -> TableSchema:
    columns = (
        Column("id", "int", "int", False),
        Column("region", "varchar", "varchar(10)", False),
        Column("name", "varchar", "varchar(40)", True),
        Column("born", "date", "date", True),
        Column("amount", "decimal", "decimal(12,2)", True),
    )
    return TableSchema("app", name, columns, key, key[0])


ORDERS, REGIONS = table("orders"), table("regions", ("region", "id"))


@pytest.fixture(autouse=True, params=["compiled", "python"])
def fold_loop(request, monkeypatch):
    monkeypatch.setattr(change_fold, "COMPILED", request.param == "compiled")
    return request.param


def test_the_compiled_fold_is_built():
    """`make install` builds it: a test run that fell back to Python would hide its defects."""
    assert change_fold._change_fold is not None


def change(schema: TableSchema, kind: RowKind, *row) -> ChangeRow:
    return ChangeRow(schema, kind, tuple(row), 0, AT)


def fold(rows: list[ChangeRow], positions: tuple[int, ...] = (0,), fit=None) -> tuple[int, dict, set]:
    images: dict = {}
    new: set = set()
    return fold_run(rows, 0, positions, fit, images, new), images, new


def test_a_key_ends_as_its_last_image_or_deleted():
    a1, a2 = (1, "eu", "a", None, Decimal("1.00")), (1, "eu", "a2", None, Decimal("2.00"))
    b = (2, "us", "b", None, None)
    rows = [
        change(ORDERS, RowKind.UPDATE_BEFORE, *b),
        change(ORDERS, RowKind.UPDATE_AFTER, *a1),  # b's key moved to 1
        change(ORDERS, RowKind.UPDATE_BEFORE, *a1),
        change(ORDERS, RowKind.UPDATE_AFTER, *a2),
        change(ORDERS, RowKind.INSERT, 3, "eu", None, None, None),
        change(ORDERS, RowKind.DELETE, 3, "eu", None, None, None),
    ]
    end, images, new = fold(rows)
    assert end == len(rows)
    assert images == {2: None, 1: a2, 3: None}
    assert new == {3}  # the batch inserts 3 before anything else changes it


def test_a_key_deleted_then_inserted_again_is_not_new():
    """The target holds it before the batch: the insert is an upsert after the delete."""
    row = (1, "eu", "a", None, None)
    _, images, new = fold([change(ORDERS, RowKind.DELETE, *row), change(ORDERS, RowKind.INSERT, *row)])
    assert images == {1: row} and new == set()


def test_a_run_ends_where_the_next_table_begins():
    rows = [
        change(ORDERS, RowKind.INSERT, 1, "eu", "a", None, None),
        change(REGIONS, RowKind.INSERT, 1, "eu", "x", None, None),
        change(ORDERS, RowKind.INSERT, 2, "eu", "b", None, None),
    ]
    images: dict = {}
    assert fold_run(rows, 0, (0,), None, images, set()) == 1
    regions: dict = {}
    assert fold_run(rows, 1, (1, 0), None, regions, set()) == 2
    assert regions == {("eu", 1): rows[1].row}  # a key of several columns is a tuple, in key order
    assert fold_run(rows, 2, (0,), None, images, set()) == 3
    assert set(images) == {1, 2}


def test_rows_the_target_cannot_hold_are_fitted_and_the_rest_kept_as_they_are():
    fit = TargetValues("", None).for_table(ORDERS)
    clean = (1, "eu", "plain", None, None)
    nul = (2, "eu", "a\0b", None, None)
    surrogate = (3, "eu", "x\ud83dy", None, None)  # a lone surrogate
    latin1 = (4, "eu", "café\0", None, None)
    rows = [change(ORDERS, RowKind.INSERT, *row) for row in (clean, nul, surrogate, latin1)]
    _, images, _ = fold(rows, fit=fit)
    assert images[1] is rows[0].row  # not copied: the fit was not called for it
    assert images[2] == (2, "eu", "ab", None, None)
    assert images[3] == (3, "eu", "x\ufffdy", None, None)
    assert images[4] == (4, "eu", "café", None, None)


def test_a_date_no_calendar_has_is_fitted():
    fit = TargetValues("", "1970-01-01").for_table(ORDERS)
    _, images, _ = fold([change(ORDERS, RowKind.INSERT, 1, "eu", None, InvalidDate("0000-00-00"), None)], fit=fit)
    assert images[1][3] != InvalidDate("0000-00-00") and not isinstance(images[1][3], InvalidDate)


def test_a_fit_without_a_screen_sees_every_row():
    seen = []

    def fit(row):
        seen.append(row)
        return row

    rows = [change(ORDERS, RowKind.INSERT, i, "eu", None, None, None) for i in range(3)]
    fold(rows, fit=fit)
    assert seen == [r.row for r in rows]


def test_counts_by_table_and_kind():
    rows = [
        change(ORDERS, RowKind.INSERT, 1, "eu", None, None, None),
        change(ORDERS, RowKind.UPDATE_BEFORE, 1, "eu", None, None, None),
        change(ORDERS, RowKind.UPDATE_AFTER, 1, "eu", "a", None, None),
        change(REGIONS, RowKind.DELETE, 1, "eu", None, None, None),
        change(ORDERS, RowKind.INSERT, 2, "eu", None, None, None),
    ]
    assert kind_counts(rows) == {
        ("app.orders", RowKind.INSERT): 2,
        ("app.orders", RowKind.UPDATE_BEFORE): 1,
        ("app.orders", RowKind.UPDATE_AFTER): 1,
        ("app.regions", RowKind.DELETE): 1,
    }
    assert kind_counts([]) == {}


def random_batch(rng: random.Random, size: int) -> list[ChangeRow]:
    texts = ["plain", "a\0b", "x\ud800", "café", "café\0", "日本", "日\0本", "\U0001f600\0", "", "\ud83d\ude00"]
    rows = []
    for _ in range(size):
        schema = rng.choice((ORDERS, ORDERS, REGIONS))
        kind = rng.choice(list(RowKind))
        born = rng.choice((None, InvalidDate("0000-00-00"), datetime(2020, 1, 1).date()))
        rows.append(change(schema, kind, rng.randrange(50), rng.choice(("eu", "us")), rng.choice(texts), born, None))
    return rows


def test_the_compiled_loops_fold_and_count_a_random_batch_as_the_reference_does(monkeypatch):
    rng = random.Random(20261127)
    fit_orders = TargetValues("?", "1970-01-01").for_table(ORDERS)
    fit_regions = TargetValues(None, None, unicode_text=True).for_table(REGIONS)
    for _ in range(20):
        rows = random_batch(rng, 400)
        results = []
        for compiled in (True, False):
            monkeypatch.setattr(change_fold, "COMPILED", compiled)
            folded: dict = {}
            at = 0
            while at < len(rows):
                schema = rows[at].schema
                images, new = folded.setdefault(schema.table_id, ({}, set()))
                positions, fit = ((0,), fit_orders) if schema is ORDERS else ((1, 0), fit_regions)
                at = fold_run(rows, at, positions, fit, images, new)
            results.append((folded, kind_counts(rows)))
        assert results[0] == results[1]


def test_a_malformed_batch_is_refused_not_misread():
    with pytest.raises((TypeError, IndexError)):
        fold([change(ORDERS, RowKind.INSERT, 1)], positions=(3,))
    with pytest.raises(ValueError):
        fold([change(ORDERS, RowKind.INSERT, 1)], positions=())
