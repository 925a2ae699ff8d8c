"""A snapshot split: one half-open chunk [start, end) of one table's chunk key, and the
values that travel with reading one: the task an executor gets, the rows it reads, the
result the driver records. (Sinks see splits only through these.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sluice import json_values
from sluice.source.endpoint import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.row_decoding import Row
from sluice.source.schema import TableSchema


@dataclass(frozen=True)
class SnapshotSplit:
    """`start` None means -inf (first chunk), `end` None means +inf (last chunk)."""

    table_id: str
    index: int
    start: Any
    end: Any

    @property
    def split_id(self) -> str:
        return f"{self.table_id}:{self.index}"

    @classmethod
    def covering(cls, table_id: str, boundaries: Sequence[Any]) -> list[SnapshotSplit]:
        """The ranges between inner boundaries, from -inf to +inf, in key order."""
        edges: list[Any] = [None, *boundaries, None]
        return [cls(table_id, i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table_id,
            "index": self.index,
            "start": json_values.encode(self.start),
            "end": json_values.encode(self.end),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SnapshotSplit:
        return cls(
            data["table"], int(data["index"]), json_values.decode(data["start"]), json_values.decode(data["end"])
        )

    def key_condition(self, key: str, value: str = "%s") -> tuple[str, list[Any]]:
        """The WHERE clause (empty for a whole table) that selects this split's rows by the
        quoted chunk key `key`, with its parameters (`value`: how a parameter is written).
        NULL chunk keys (allowed without a primary key) sort first: the first chunk has them."""
        conditions: list[str] = []
        params: list[Any] = []
        if self.start is not None:
            conditions.append(f"{key} >= {value}")
            params.append(self.start)
        if self.end is not None:
            conditions.append(f"({key} < {value}{f' OR {key} IS NULL' if self.start is None else ''})")
            params.append(self.end)
        return (f" WHERE {' AND '.join(conditions)}" if conditions else ""), params

    def spanning(self, last: SnapshotSplit) -> SnapshotSplit:
        """The key range from this split's start to the end of `last`, a later split of its table."""
        return SnapshotSplit(self.table_id, self.index, self.start, last.end)


@dataclass(frozen=True)
class SplitTask:
    """Everything an executor needs to read one split; shipped by Spark to the task.
    `replaces`: the target may hold rows in the split's key range (it was not empty when
    the run began), which the split's rows then replace."""

    split: SnapshotSplit
    schema: TableSchema
    endpoint: SourceEndpoint
    server_id: int
    fetch_size: int
    replaces: bool = False


@dataclass(frozen=True)
class SplitResult:
    split_id: str
    high_watermark: BinlogOffset
    rows: int
    # Values a type rule changed on the executor that read it, (table, column, rule, count):
    # the driver counts them with its own (sink/target_values).
    rewritten: tuple[tuple[str, str, str, int], ...] = ()


@dataclass(frozen=True)
class SplitRead:
    """Adjacent splits of one table read in one read view, so at one high watermark: their
    rows (iterate them before the next read). Which of the offered splits the rows cover is
    known once they were iterated: the reader takes splits into a read view while it has
    read fewer than a few ten thousand rows."""

    schema: TableSchema
    rows: Iterable[Row]
    high_watermark: BinlogOffset
    covered: Callable[[], list[tuple[SnapshotSplit, int]]]  # once the rows were iterated: the splits, with rows
    # The key range the target must clear before it loads the rows: every split offered to
    # the read (those it does not cover are read next, and clear their range again).
    replaces: SnapshotSplit | None = None

    def results(self) -> list[SplitResult]:
        return [SplitResult(split.split_id, self.high_watermark, rows) for split, rows in self.covered()]


class ProjectedRows:
    """A split's rows in the target's columns, as often as they are iterated."""

    def __init__(self, rows: Iterable[Row], project: Callable[[Row], Row]) -> None:
        self._rows, self._project = rows, project

    def __iter__(self) -> Iterator[Row]:
        return map(self._project, self._rows)


# How a sink gets a Spark task's splits read: the split reader's read_splits, handed in by
# the runtime, so that sinks depend on these values and not on the reader.
ReadSplits = Callable[[list[SplitTask]], Iterator[SplitRead]]


def chunk_keys_of(schema: TableSchema, rows: Iterable[Row], also: Iterable[Any] = ()) -> list[Any]:
    """The distinct chunk keys of rows (in the table's columns) and of `also`: a range's
    keys, where a target cannot order the chunk key as the source does."""
    at = schema.position(schema.chunk_key)
    return list(dict.fromkeys([*(row[at] for row in rows), *also]))
