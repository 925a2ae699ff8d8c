"""Iceberg's row delta, which pyiceberg (0.12) does not write: one snapshot that adds data
files and position delete files and removes files of either kind, so a commit's bytes follow
its changes (merge-on-read) instead of rewriting every data file a changed key is in.

Position deletes are format version 2's delete files: Spark, Trino, Flink, DuckDB and
pyiceberg all read them (equality deletes pyiceberg does not; v3 deletion vectors only the
newest readers)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    ManifestWriterV2,
)
from pyiceberg.table import Transaction
from pyiceberg.table.snapshots import Operation, SnapshotSummaryCollector, Summary, update_snapshot_summaries
from pyiceberg.table.update.snapshot import _SnapshotProducer
from pyiceberg.typedef import EMPTY_DICT, Record
from pyiceberg.types import StringType

# The reserved field ids of a position delete file's columns (the Iceberg spec's).
FILE_PATH_ID, POS_ID = 2147483546, 2147483545
POSITION_DELETES = pa.schema(
    [
        pa.field("file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": str(FILE_PATH_ID)}),
        pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": str(POS_ID)}),
    ]
)


def write_position_deletes(io: FileIO, location: str, deleted: Mapping[DataFile, Any]) -> list[DataFile]:
    """The positions deleted from each data file, as one position delete file per partition
    (a delete file belongs to its data files' spec and partition), rows sorted by path and
    position as the spec asks."""
    groups: dict[tuple[int, Any], list[DataFile]] = defaultdict(list)
    for data_file in deleted:
        groups[(data_file.spec_id, tuple(data_file.partition))].append(data_file)
    files = []
    for data_files in groups.values():
        data_files.sort(key=lambda f: f.file_path)
        paths = [f.file_path for f in data_files]
        positions = [pa.array(deleted[f], pa.int64()).sort() for f in data_files]
        rows = pa.table(
            [
                pa.array(
                    [p for p, found in zip(paths, positions, strict=True) for _ in range(len(found))], pa.string()
                ),
                pa.concat_arrays(positions),
            ],
            schema=POSITION_DELETES,
        )
        path = f"{location.rstrip('/')}/data/sluice-deletes-{uuid.uuid4().hex}.parquet"
        output = io.new_output(path)
        with output.create() as stream:
            pq.write_table(rows, stream)
        first = data_files[0]
        delete_file = DataFile.from_args(
            content=DataFileContent.POSITION_DELETES,
            file_path=path,
            file_format=FileFormat.PARQUET,
            partition=first.partition if len(first.partition) else Record(),
            record_count=rows.num_rows,
            file_size_in_bytes=len(output),
            # Readers match a delete file to the data files its path bounds cover.
            lower_bounds={FILE_PATH_ID: to_bytes(StringType(), paths[0])},
            upper_bounds={FILE_PATH_ID: to_bytes(StringType(), paths[-1])},
            sort_order_id=None,
            equality_ids=None,
            key_metadata=None,
        )
        delete_file.spec_id = first.spec_id  # (from_args does not take it)
        files.append(delete_file)
    return files


class _DeletesManifestWriter(ManifestWriterV2):
    """A version 2 manifest of delete files (pyiceberg writes data manifests only)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class RowDelta(_SnapshotProducer["RowDelta"]):
    """Adds data and delete files and removes files of either kind, in one snapshot. A
    manifest that lists a removed file is written again with the file as deleted and the
    rest as existing (their sequence numbers kept: a position delete applies to the data
    files of its sequence number and older)."""

    def __init__(
        self, transaction: Transaction, io: FileIO, snapshot_properties: dict[str, str], merge_manifests: bool = False
    ) -> None:
        super().__init__(Operation.OVERWRITE, transaction, io, snapshot_properties=snapshot_properties)
        self.merge_manifests = merge_manifests  # the parent's manifests written as one per spec and content
        self._added_delete_files: list[DataFile] = []
        self._removed: set[str] = set()  # paths of removed files, data or delete
        self._removed_files: list[DataFile] = []

    def add_data_files(self, files: Iterable[DataFile]) -> RowDelta:
        self._added_data_files.extend(files)
        return self

    def add_delete_files(self, files: Iterable[DataFile]) -> RowDelta:
        self._added_delete_files.extend(files)
        return self

    def remove_files(self, files: Iterable[DataFile]) -> RowDelta:
        for data_file in files:
            if data_file.file_path not in self._removed:
                self._removed.add(data_file.file_path)
                self._removed_files.append(data_file)
        return self

    def _writer(self, spec_id: int, content: ManifestContent) -> ManifestWriter:
        arguments = (
            self.spec(spec_id),
            self.schema(),
            self.new_manifest_output(),
            self._snapshot_id,
            self._compression,
        )
        return (
            _DeletesManifestWriter(*arguments) if content == ManifestContent.DELETES else ManifestWriterV2(*arguments)
        )

    def _manifests(self) -> list[ManifestFile]:
        if self._transaction.table_metadata.format_version != 2:
            raise ValueError("merge-on-read commits are written into Iceberg tables of format version 2")
        manifests = []
        for content, files in (
            (ManifestContent.DATA, self._added_data_files),
            (ManifestContent.DELETES, self._added_delete_files),
        ):
            by_spec: dict[int, list[DataFile]] = defaultdict(list)
            for data_file in files:
                by_spec[_spec_id(data_file, self._transaction.table_metadata.default_spec_id)].append(data_file)
            for spec_id, added in by_spec.items():
                with self._writer(spec_id, content) as writer:
                    for data_file in added:
                        writer.add(
                            ManifestEntry.from_args(
                                status=ManifestEntryStatus.ADDED, snapshot_id=self._snapshot_id, data_file=data_file
                            )
                        )
                manifests.append(writer.to_manifest_file())
        return manifests + self._existing_manifests()

    def _existing_manifests(self) -> list[ManifestFile]:
        parent = (
            self._transaction.table_metadata.snapshot_by_id(self._parent_snapshot_id)
            if self._parent_snapshot_id
            else None
        )
        if parent is None:
            return []
        kept: list[ManifestFile] = []
        merged: dict[tuple[int, ManifestContent], list[ManifestEntry]] = defaultdict(list)
        for manifest in parent.manifests(io=self._io):
            if not (self._removed or self.merge_manifests):
                kept.append(manifest)
                continue
            entries = manifest.fetch_manifest_entry(io=self._io, discard_deleted=True)
            if self.merge_manifests:
                merged[(manifest.partition_spec_id, manifest.content)].extend(entries)
            elif any(e.data_file.file_path in self._removed for e in entries):
                kept.append(self._rewritten(manifest.partition_spec_id, manifest.content, entries))
            else:
                kept.append(manifest)
        kept.extend(
            self._rewritten(spec_id, content, entries) for (spec_id, content), entries in merged.items() if entries
        )
        return kept

    def _rewritten(self, spec_id: int, content: ManifestContent, entries: list[ManifestEntry]) -> ManifestFile:
        """Live entries in a manifest written anew: the removed ones as deleted, the rest as existing."""
        with self._writer(spec_id, content) as writer:
            for entry in entries:
                removed = entry.data_file.file_path in self._removed
                writer.add_entry(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.DELETED if removed else ManifestEntryStatus.EXISTING,
                        snapshot_id=self._snapshot_id if removed else entry.snapshot_id,
                        sequence_number=entry.sequence_number,
                        file_sequence_number=entry.file_sequence_number,
                        data_file=entry.data_file,
                    )
                )
        return writer.to_manifest_file()

    def _deleted_entries(self) -> list[ManifestEntry]:
        return []  # written into the rewritten manifests by _existing_manifests

    def _validate_concurrency(self) -> None:
        """Nothing to validate: a commit that lost the race is made again by its caller from
        the table as reloaded (its positions found anew)."""

    def _summary(self, snapshot_properties: dict[str, str] = EMPTY_DICT) -> Summary:
        metadata = self._transaction.table_metadata
        schema, specs = metadata.schema(), metadata.specs()
        collector = SnapshotSummaryCollector()
        for data_file in [*self._added_data_files, *self._added_delete_files]:
            collector.add_file(data_file, schema, specs[_spec_id(data_file, metadata.default_spec_id)])
        for data_file in self._removed_files:
            collector.remove_file(data_file, schema, specs[data_file.spec_id])
        parent = metadata.snapshot_by_id(self._parent_snapshot_id) if self._parent_snapshot_id else None
        return update_snapshot_summaries(
            Summary(operation=self._operation, **collector.build(), **snapshot_properties),
            previous_summary=parent.summary if parent is not None else None,
        )


def _spec_id(data_file: DataFile, default: int) -> int:
    """The spec a file was written with: pyiceberg's writer leaves it unset on files of the
    table's current spec."""
    return data_file.spec_id if hasattr(data_file, "_spec_id") else default
