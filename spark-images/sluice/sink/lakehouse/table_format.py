"""What the lakehouse sink asks of a table format (Iceberg, Delta Lake): one commit into
one table carrying the pipeline's record, the format's optimistic race as the fence, and
the table maintenance a long-running pipeline needs."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from sluice.errors import SinkError
from sluice.event.schema_change import SchemaChangeEvent
from sluice.event.snapshot_split import SnapshotSplit
from sluice.pipeline.partition_key import PartitionField
from sluice.pipeline.sink_configs import Maintenance
from sluice.source.schema import TableSchema

if TYPE_CHECKING:
    pass

# The pipeline's record in a table's commits: which pipeline, the run's epoch (the fence),
# where the binlog reader was after it, the snapshot splits it holds.
T = TypeVar("T")
PIPELINE, EPOCH, END, SPLITS = "sluice.pipeline", "sluice.epoch", "sluice.end", "sluice.splits"


COMMIT_ATTEMPTS = 10


def retried(attempt: Callable[[], T], conflict: type[Exception]) -> T:
    """An attempt made again, after a growing pause, while it loses the format's optimistic
    race (`conflict`); each attempt looks at the table anew."""
    for number in range(COMMIT_ATTEMPTS - 1):
        try:
            return attempt()
        except conflict:
            time.sleep(0.05 * 2**number)
    return attempt()


class Fenced(SinkError):
    """A newer run of the pipeline committed into the table: this writer commits nothing."""

    troubleshooting = "fenced"


DataFile = Any  # a data file a format's file writer wrote, in no commit yet


@dataclass
class TableCommit:
    """One commit into one table: rows deleted (by key, by chunk key range, or all), data
    files and rows added, and the pipeline's record."""

    record: dict[str, str]
    key_columns: tuple[str, ...] = ()
    deleted_keys: list[tuple[Any, ...]] = field(default_factory=list)  # values of key_columns; None matches NULL
    cleared_ranges: list[SnapshotSplit] = field(default_factory=list)  # of the table's chunk key
    clear_all: bool = False
    files: list[DataFile] = field(default_factory=list)
    rows: pa.Table | None = None

    def upserts_by(self, key: tuple[str, ...]) -> bool:
        """Whether the commit is rows replacing those of their keys (a binlog batch, a
        repair by key), not key ranges cleared: what a merge-on-read commit writes."""
        return (
            bool(self.key_columns)
            and self.key_columns == key
            and self.rows is not None
            and not (self.cleared_ranges or self.clear_all)
        )


class TableFormat(ABC):
    """The tables of one format: what the lakehouse sink asks of Iceberg or Delta Lake."""

    name: str
    partition_keys: dict[str, tuple[PartitionField, ...]]  # `partition.key`, by table id
    table_properties: dict[str, str]  # `table.properties.*`, of every table
    table_options: dict[str, dict[str, str]]  # a transform's table-options, by table id

    def properties_of(self, table_id: str) -> dict[str, str]:
        """What a table Sluice creates is given: the sink's table properties, its own options over them."""
        return {**self.table_properties, **self.table_options.get(table_id, {})}

    @abstractmethod
    def create(self, schema: TableSchema, arrow: pa.Schema) -> None:
        """Creates the table unless it exists (with `table.properties.*`, keyed by its row
        key). A table `partition.key` names is partitioned so, the one that exists too (a
        changed option repartitions it: Iceberg's spec evolves, Delta's table is rewritten)."""

    @abstractmethod
    def exists(self, table_id: str) -> bool: ...

    @abstractmethod
    def holds_rows(self, table_id: str) -> bool: ...

    @abstractmethod
    def column_names(self, table_id: str) -> list[str]:
        """The table's columns, as its schema has them now."""

    @abstractmethod
    def recorded_versions(self, table_id: str) -> list[tuple[int, Mapping[str, str]]]:
        """Each commit of the table's current history, newest first: its version (Iceberg's
        snapshot id, Delta's version) and its record (commits of other writers hold none)."""

    def records(self, table_id: str) -> list[Mapping[str, str]]:
        return [record for _, record in self.recorded_versions(table_id)]

    @abstractmethod
    def commit(self, schema: TableSchema, commit: TableCommit, fence: Callable[[int], None]) -> None:
        """Commits, in one commit where the format can (Delta clears a range and adds files
        in two). Before each attempt, `fence` is given the newest epoch of the record's
        pipeline in the table as loaded for the attempt (it raises Fenced for a newer run's)."""

    @abstractmethod
    def file_writer(self, schema: TableSchema) -> Callable[[pa.Table], list[DataFile]]:
        """Writes rows as data files of the table (picklable: executors write snapshot chunks)."""

    @abstractmethod
    def scan(
        self,
        schema: TableSchema,
        columns: Sequence[str] | None = None,
        split: SnapshotSplit | None = None,
        version: int | None = None,
        keys: Sequence[Any] | None = None,
    ) -> pa.Table:
        """The table's rows (of `columns`, in the key range of `split` or of these chunk
        `keys`) as of `version` (one of recorded_versions'; None: the current one)."""

    @abstractmethod
    def apply(self, event: SchemaChangeEvent, before: Mapping[str, TableSchema]) -> None:
        """The metadata applier: one schema change event; idempotent."""

    @abstractmethod
    def maintain(
        self, schema: TableSchema, maintenance: Maintenance, record: Mapping[str, str], fence: Callable[[int], None]
    ) -> MaintenanceDone:
        """Compacts the table's small files (one commit carrying `record`, fenced as commit()
        is) and expires what is older than the retention, deleting the files no
        kept snapshot or version reads."""


@dataclass(frozen=True)
class MaintenanceDone:
    compacted: int  # files rewritten into fewer
    deleted: int  # files no kept snapshot or version reads
