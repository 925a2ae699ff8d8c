"""Where a batch's keys live in a lakehouse table: the data file and row position of each
key's live row, what a merge-on-read commit deletes (Iceberg position deletes, Delta
deletion vectors). Its cost follows the keys: files whose key bounds hold none of them are
skipped, and of the rest only the key columns are read, once. Data and delete files never
change, so what was read of them is kept (up to a memory cap); a lost cache is the table
read again, never a wrong answer."""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.sink.arrow_rows import arrow_value
from sluice.sink.lakehouse.table_format import TableCommit
from sluice.source.schema import TableSchema

CACHE_BYTES = 256 << 20  # key columns and deleted positions kept between commits
POSITION = "_sluice_pos"
T = TypeVar("T")


@dataclass(frozen=True)
class KeyedFile:
    """A data file as the locator sees it, from the format's metadata."""

    path: str
    bounds: tuple[Any, Any] | None  # the first key column's lower and upper bound (None: unknown)
    read_keys: Callable[[], pa.Table]  # its key columns, typed as the batch's keys
    deleted: Callable[[], np.ndarray | None]  # the positions its deletes delete already


class KeyPositions:
    """The live rows of keys, by data file; one per table, kept across its commits."""

    def __init__(self, cache_bytes: int = CACHE_BYTES) -> None:
        self.cache_bytes = cache_bytes
        self._cached: OrderedDict[Hashable, Any] = OrderedDict()
        self._size = 0

    def find(self, files: Iterable[KeyedFile], keys: pa.Table) -> dict[str, np.ndarray]:
        """The positions of rows whose key columns equal one of `keys`' rows, by the path of
        each data file that holds one, less the positions its deletes delete already."""
        if not keys.num_rows:
            return {}
        first = keys.column(0).to_pylist()
        ordered = sorted(v for v in first if v is not None) if _orderable(first) else None
        found = {}
        for data_file in files:
            if ordered is not None and data_file.bounds is not None and not _within(ordered, *data_file.bounds):
                continue
            held = self.cached(
                ("keys", data_file.path, tuple(keys.column_names)), lambda f=data_file: _HeldKeys(f.read_keys())
            )
            positions = held.matching(keys)
            if len(positions):
                deleted = data_file.deleted()
                if deleted is not None and len(deleted):
                    positions = positions[~np.isin(positions, deleted)]
            if len(positions):
                found[data_file.path] = positions
        return found

    def cached(self, key: Hashable, read: Callable[[], T]) -> T:
        """What `read` gives, kept under `key` while the cache has room (the least recently
        used goes first)."""
        if key in self._cached:
            self._cached.move_to_end(key)
            return self._cached[key]
        value = read()
        self._cached[key] = value
        self._size += _size(value)
        while self._size > self.cache_bytes and len(self._cached) > 1:
            _, dropped = self._cached.popitem(last=False)
            self._size -= _size(dropped)
        return value


class _HeldKeys:
    """A data file's key columns; a single integer column also sorted, so that a batch's
    keys are found by binary search, in time that follows the keys, not the file."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.sorted: np.ndarray | None = None
        self.order: np.ndarray | None = None
        column = table.column(0) if table.num_columns == 1 else None
        if column is not None and pa.types.is_integer(column.type) and column.null_count == 0:
            values = column.to_numpy()
            self.order = np.argsort(values, kind="stable")
            self.sorted = values[self.order]

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes) + (0 if self.sorted is None else 2 * int(self.sorted.nbytes))

    def matching(self, keys: pa.Table) -> np.ndarray:
        """Positions of rows equal to one of `keys`' rows, in order."""
        if self.sorted is not None and self.order is not None:
            wanted = keys.column(0).drop_null().to_numpy()
            if wanted.dtype == self.sorted.dtype:
                left = np.searchsorted(self.sorted, wanted, "left")
                right = np.searchsorted(self.sorted, wanted, "right")
                hits = right > left
                if not hits.any():
                    return np.empty(0, np.int64)
                left, right = left[hits], right[hits]
                if (right - left).max() == 1:  # each key once in the file: the usual case
                    return np.unique(self.order[left]).astype(np.int64)
                runs = [self.order[a:b] for a, b in zip(left, right, strict=True)]
                return np.unique(np.concatenate(runs)).astype(np.int64)
        return _matching(self.table.cast(keys.schema), keys)


def deleted_keys(schema: TableSchema, commit: TableCommit) -> pa.Table:
    """A by-key commit's keys (every key its batch changed) as a table of its key columns,
    typed as the commit's rows."""
    assert commit.rows is not None
    columns = [schema.column(name) for name in commit.key_columns]
    return pa.table(
        [
            pa.array([arrow_value(c, k[i]) for k in commit.deleted_keys], commit.rows.schema.field(c.name).type)
            for i, c in enumerate(columns)
        ],
        names=[c.name for c in columns],
    )


def _size(value: Any) -> int:
    if isinstance(value, (pa.Table, np.ndarray, _HeldKeys)):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(_size(v) for v in value.values())
    if isinstance(value, list):  # a manifest's entries, each with its file's statistics
        return 1024 * len(value)
    return 64


def _orderable(values: list[Any]) -> bool:
    """Whether the values compare as the format's bounds do (integers, or text by code point)."""
    kinds = {type(v) for v in values if v is not None}
    return kinds == {int} or kinds == {str}


def _within(ordered: list[Any], low: Any, high: Any) -> bool:
    """Whether one of the sorted values lies in [low, high]."""
    try:
        at = bisect.bisect_left(ordered, low)
        return at < len(ordered) and ordered[at] <= high
    except TypeError:  # bounds of another type than the keys': the file may hold them
        return True


def _matching(held: pa.Table, keys: pa.Table) -> np.ndarray:
    """Positions of `held`'s rows equal to one of `keys`' rows."""
    if held.num_columns == 1:
        mask = pc.is_in(held.column(0), value_set=keys.column(0).combine_chunks())
        return pc.indices_nonzero(mask).to_numpy().astype(np.int64)
    numbered = held.append_column(POSITION, pa.array(np.arange(held.num_rows, dtype=np.int64)))
    joined = numbered.join(keys, keys=held.column_names, join_type="inner")
    return np.sort(joined.column(POSITION).to_numpy())
