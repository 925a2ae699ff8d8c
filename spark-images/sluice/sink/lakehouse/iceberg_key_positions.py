"""An Iceberg table's data files as the key locator sees them: the key column's bounds from
the manifests, the key columns read by field id (a renamed column keeps its id), and the
positions the position delete files delete already (each delete file read once). Manifests
never change either: each is read once too, where pyiceberg's scan planning read every
manifest of the table again for every commit (two thirds of a commit's time at 2,000,000
rows)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, Table
from pyiceberg.types import IntegerType, LongType, StringType

from sluice.sink.lakehouse.iceberg_row_delta import FILE_PATH_ID, POS_ID
from sluice.sink.lakehouse.key_positions import KeyedFile, KeyPositions

_BOUNDED = (IntegerType, LongType, StringType)  # key types whose file bounds are compared


def live_files(table: Table, cache: KeyPositions) -> list[FileScanTask]:
    """The current snapshot's data files, each with the table's every position delete file
    (a position delete names the data file it deletes from, and file names are never used
    twice, so a delete file applies to the data files it names and to no other). A table
    with equality deletes (another writer's) is planned by pyiceberg, which matches them."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    data: list[DataFile] = []
    deletes: set[DataFile] = set()
    for manifest in snapshot.manifests(table.io):
        entries = cache.cached(
            ("manifest", manifest.manifest_path),
            lambda manifest=manifest: manifest.fetch_manifest_entry(table.io, discard_deleted=True),
        )
        for entry in entries:
            content = entry.data_file.content
            if content == DataFileContent.EQUALITY_DELETES:
                return list(table.scan().plan_files())
            (data.append if content == DataFileContent.DATA else deletes.add)(entry.data_file)
    return [FileScanTask(data_file, delete_files=deletes) for data_file in data]


def keyed_files(
    io: FileIO, schema: Schema, tasks: Sequence[FileScanTask], keys: pa.Schema, cache: KeyPositions
) -> Iterator[KeyedFile]:
    ids = tuple(schema.find_field(name).field_id for name in keys.names)
    kind = schema.find_field(ids[0]).field_type
    for task in tasks:
        data_file = task.file
        lower, upper = (data_file.lower_bounds or {}).get(ids[0]), (data_file.upper_bounds or {}).get(ids[0])
        bounds = (
            (from_bytes(kind, lower), from_bytes(kind, upper))
            if isinstance(kind, _BOUNDED) and lower and upper
            else None
        )
        yield KeyedFile(
            data_file.file_path,
            bounds,
            lambda path=data_file.file_path: _key_columns(io, path, ids, keys),
            lambda task=task: deleted_positions(io, task, cache),
        )


def deleted_positions(io: FileIO, task: FileScanTask, cache: KeyPositions) -> np.ndarray | None:
    """The positions of the task's data file that its delete files delete."""
    path = task.file.file_path
    deleted = [p for d in task.delete_files if (p := _deletes(io, d, cache).get(path)) is not None]
    return np.unique(np.concatenate(deleted)) if deleted else None


def deleted_paths(io: FileIO, delete_file: DataFile, cache: KeyPositions) -> set[str]:
    """The data files a position delete file deletes from."""
    return set(_deletes(io, delete_file, cache))


def _key_columns(io: FileIO, path: str, ids: tuple[int, ...], kinds: pa.Schema) -> pa.Table:
    with io.new_input(path).open() as stream:
        parquet = pq.ParquetFile(stream)
        names = {int(f.metadata[b"PARQUET:field_id"]): f.name for f in parquet.schema_arrow if f.metadata}
        table = parquet.read(columns=[names[i] for i in ids if i in names])
    columns = [
        table.column(names[i]).cast(kind.type) if i in names else pa.nulls(table.num_rows, kind.type)
        for i, kind in zip(ids, kinds, strict=True)
    ]
    return pa.table(columns, names=kinds.names)


def _deletes(io: FileIO, delete_file: DataFile, cache: KeyPositions) -> dict[str, np.ndarray]:
    """A position delete file's positions, by the data file they delete from."""

    def read() -> dict[str, np.ndarray]:
        with io.new_input(delete_file.file_path).open() as stream:
            parquet = pq.ParquetFile(stream)
            names = {int(f.metadata[b"PARQUET:field_id"]): f.name for f in parquet.schema_arrow}
            rows = parquet.read(columns=[names[FILE_PATH_ID], names[POS_ID]])
        paths = rows.column(0).combine_chunks().dictionary_encode()
        positions = rows.column(1).to_numpy()
        indices = paths.indices.to_numpy(zero_copy_only=False)
        return {str(p): positions[indices == i] for i, p in enumerate(paths.dictionary.to_pylist())}

    return cache.cached(("deletes", delete_file.file_path), read)
