"""A batch's changes folded to each key's last image, and counted by table and kind.

A target written by key (the jdbc sink) applies a batch as its keys' last images: a row
changed ten times in a batch is written once. The fold and the count touch every changelog
row of every batch, so they are compiled (_change_fold.c, built by `make install` and into
the image) where they are built. The Python loops here are the reference the tests hold the
C ones to, and what runs where the C ones were not built.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from sluice.event.row_change import ChangeRow, RowKind
from sluice.source.row_decoding import Row

try:
    from sluice.event import _change_fold
except ImportError:  # a source tree nobody built: the Python loops run
    _change_fold = None  # type: ignore[assignment]

COMPILED = _change_fold is not None  # tests turn it off to run the reference loops

KINDS = (RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE)
_REMOVES = (RowKind.DELETE, RowKind.UPDATE_BEFORE)
_SURROGATE = re.compile("[\ud800-\udfff]")


class Screen(NamedTuple):
    """The rows a row fit (sink/target_values) may change: those with a value at one of
    `slots` of class `odd`, or a string holding NUL or (`surrogates`) a UTF-16 surrogate.
    The fit gives every other row back as it is, so the fold calls it on these alone."""

    slots: tuple[int, ...]
    surrogates: bool
    odd: type


def has_surrogates(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None  # isascii is a flag's read


def may_fit(value: Any, odd: type, surrogates: bool) -> bool:
    """Whether a row fit may change this value: one of class `odd`, or a string holding
    NUL or (`surrogates`) a UTF-16 surrogate."""
    return value.__class__ is odd or (
        value.__class__ is str and ("\x00" in value or (surrogates and has_surrogates(value)))
    )


def screened(row: Row, screen: Screen) -> bool:
    return any(may_fit(row[i], screen.odd, screen.surrogates) for i in screen.slots)


def fold_run(
    rows: Sequence[ChangeRow],
    start: int,
    key_positions: tuple[int, ...],
    fit: Callable[[Row], Row] | None,
    images: dict[Any, Row | None],
    new: set[Any],
) -> int:
    """Folds the run of rows from `start` that share its schema (batches come in runs of
    one table's changes) into `images`: each key's last image, None where it ends deleted.
    `new` gains the keys the batch inserts before anything else changes them (the target
    normally lacks them). A key is the value at its one position, else a tuple. `fit` (with
    its `screen`, if it has one) makes each row what the target holds. Gives the index
    after the run."""
    if not key_positions:
        raise ValueError("fold_run folds rows by a key: a table without one is a bag")
    if _change_fold is not None and COMPILED:
        return _change_fold.fold_run(rows, start, key_positions, fit, images, new, (*KINDS[:2], RowKind.DELETE))
    schema, screen = rows[start][0], getattr(fit, "screen", None)
    single = key_positions[0] if len(key_positions) == 1 else None
    end = start
    while end < len(rows) and rows[end][0] is schema:
        _, kind, row, _, _ = rows[end]
        if fit is not None and (screen is None or screened(row, screen)):
            row = fit(row)
        key = row[single] if single is not None else tuple(row[k] for k in key_positions)
        if kind is RowKind.INSERT and key not in images:
            new.add(key)
        images[key] = None if kind in _REMOVES else row
        end += 1
    return end


def run_end(rows: Sequence[ChangeRow], start: int) -> int:
    """The index after the run of rows from `start` that share its schema."""
    schema, end = rows[start][0], start
    while end < len(rows) and rows[end][0] is schema:
        end += 1
    return end


def kind_counts(rows: Sequence[ChangeRow]) -> collections.Counter[tuple[str, RowKind]]:
    """Rows by table and kind, for progress and metrics."""
    counts: collections.Counter[tuple[str, RowKind]] = collections.Counter()
    if _change_fold is not None and COMPILED:
        for schema, *numbers in _change_fold.run_counts(rows, KINDS):
            for kind, n in zip(KINDS, numbers, strict=True):
                if n:
                    counts[(schema.table_id, kind)] += n
        return counts
    counts.update((row.schema.table_id, row.kind) for row in rows)
    return counts
