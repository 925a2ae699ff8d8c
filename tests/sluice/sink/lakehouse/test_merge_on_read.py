"""Merge-on-read commits into lakehouse tables: a batch's changed keys are deleted by
position beside the data (Iceberg position delete files) and its rows added, so a commit's
bytes follow its changes, not the table's size; compaction rewrites what the deletes left
behind, exactly once with the stream. Every table is read back by the format's own library."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from deltalake import write_deltalake
from pyiceberg.manifest import ManifestFile

from sluice.event.row_change import ChangeBatch, ChangeRow, RowKind
from sluice.event.schema_change import CreateTable, DropTable
from sluice.runtime.pipeline_metrics import PipelineMetrics
from sluice.sink.arrow_rows import ArrowRows
from sluice.sink.lakehouse.iceberg import IcebergTables
from sluice.sink.lakehouse.sink import LakehouseSink
from sluice.sink.target_values import TargetValues
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema
from tests.harness.lakehouse import lakehouse_rows, lakehouse_sink, table_files
from tests.sluice.sink.lakehouse.test_sink import FORMATS, pipeline_yaml_for

SCHEMA = TableSchema(
    "db", "t", (Column("id", "bigint", "bigint", False), Column("v", "varchar", "varchar(40)", True)), ("id",), "id"
)
MERGING = list(FORMATS)


def _sink(directory: Path, target: str, schema: TableSchema = SCHEMA, **options) -> tuple[LakehouseSink, dict]:
    """A sink of the pipeline's own (its tables made), and its options (to read them back)."""
    options = {**FORMATS[target](directory), **options}
    sink = lakehouse_sink(json.dumps(pipeline_yaml_for(options)), {})
    sink.prepare([schema])
    return sink, options


def _filled(sink: LakehouseSink, rows: int, files: int, schema: TableSchema = SCHEMA) -> dict:
    """The table holding `rows` rows in `files` data files of key ranges, as a snapshot writes them."""
    step = rows // files
    for first in range(0, rows, step):
        _append(sink, schema, [(i, f"value {i}") for i in range(first, min(rows, first + step))])
    return {i: f"value {i}" for i in range(rows)}


def _append(sink: LakehouseSink, schema: TableSchema, rows: list[tuple]) -> None:
    """Rows appended by the format's own library, as another writer or an old snapshot would."""
    part = ArrowRows(schema, TargetValues(None, "")).table(rows)
    if isinstance(sink.tables, IcebergTables):
        sink.tables.catalog.load_table(schema.table_id).append(part)
    else:
        write_deltalake(sink.tables.uri(schema.table_id), part, mode="append")


class Changes:
    """Batches of changes at rising binlog positions, and the table they should leave."""

    def __init__(self, sink: LakehouseSink, expected: dict, schema: TableSchema = SCHEMA) -> None:
        self.writer, self.expected, self.schema, self.at = sink.writer(), expected, schema, 0

    def commit(self, updated=(), deleted=(), inserted=(), value: str = "changed") -> None:
        changes = []
        for kind, keys in ((RowKind.UPDATE_AFTER, updated), (RowKind.DELETE, deleted), (RowKind.INSERT, inserted)):
            for key in keys:
                self.at += 1
                row = (key, None if kind == RowKind.DELETE else value)
                changes.append(ChangeRow(self.schema, kind, row, 0, BinlogOffset("b.1", self.at)))
                if kind == RowKind.DELETE:
                    self.expected.pop(key, None)
                else:
                    self.expected[key] = value
        self.at += 1
        self.writer.write_changes(ChangeBatch(changes), BinlogOffset("b.1", self.at), drop_split_records=False)


def _spread(size: int, count: int, seed: int) -> list[int]:
    return random.Random(seed).sample(range(size), count)


@pytest.mark.parametrize("target", MERGING)
def test_a_commit_of_keys_spread_over_the_table_rewrites_no_data_file(tmp_path, target):
    sink, options = _sink(tmp_path / "lake", target)
    changes = Changes(sink, _filled(sink, 20_000, 4))
    before = table_files(sink, SCHEMA.table_id)
    keys = _spread(20_000, 300, seed=1)
    changes.commit(updated=keys[:200], deleted=keys[200:], inserted=range(20_000, 20_050))

    after = table_files(sink, SCHEMA.table_id)
    assert before.data <= after.data, f"data files rewritten: {sorted(before.data - after.data)}"
    assert len(after.data - before.data) == 1, "the changed rows are more than one new file"
    assert after.added_bytes(before) < 40_000, f"{after.added_bytes(before)} bytes written for 350 changed rows"
    assert dict(lakehouse_rows(options, SCHEMA)) == changes.expected


@pytest.mark.parametrize("target", MERGING)
def test_a_commits_bytes_follow_its_changes_not_the_tables_size(tmp_path, target):
    written = {}
    for size in (10_000, 100_000):
        sink, options = _sink(tmp_path / f"lake-{size}", target)
        changes = Changes(sink, _filled(sink, size, 5))
        before = table_files(sink, SCHEMA.table_id)
        changes.commit(updated=_spread(size, 500, seed=2))
        written[size] = table_files(sink, SCHEMA.table_id).added_bytes(before)
    assert written[100_000] < 1.3 * written[10_000], f"bytes written by one commit, by table size: {written}"


@pytest.mark.parametrize("target", MERGING)
def test_a_key_deleted_inserted_again_and_changed_over_commits_has_one_live_row(tmp_path, target):
    """Each commit deletes a key's live row only: a row its deletes removed already is not
    found again (a reinserted key's old row stays deleted once)."""
    sink, options = _sink(tmp_path / "lake", target)
    changes = Changes(sink, _filled(sink, 1_000, 2))
    changes.commit(updated=[5, 6, 7], value="first")
    changes.commit(deleted=[5, 900])
    changes.commit(inserted=[5, 900], value="back")
    changes.commit(updated=[5, 6, 900, 1_001], value="again")
    changes.commit(updated=[6], deleted=[7])
    assert dict(lakehouse_rows(options, SCHEMA)) == changes.expected
    files = table_files(sink, SCHEMA.table_id)
    assert files.deleted_rows == files.rows - len(changes.expected), "a row was deleted twice, or not at all"


@pytest.mark.parametrize("target", MERGING)
def test_a_run_that_lost_what_it_knew_of_the_files_finds_the_keys_in_the_table_again(tmp_path, target):
    first, _ = _sink(tmp_path / "lake", target)
    expected = _filled(first, 5_000, 3)
    Changes(first, expected).commit(updated=range(0, 5_000, 7), value="one")
    second, second_options = _sink(tmp_path / "lake", target)  # a new run: nothing cached
    changes = Changes(second, expected)
    changes.at = 10_000
    changes.commit(updated=range(0, 5_000, 5), deleted=range(1, 5_000, 7), value="two")
    assert dict(lakehouse_rows(second_options, SCHEMA)) == changes.expected


@pytest.mark.parametrize("target", MERGING)
def test_rows_of_a_composite_text_key_are_found_by_every_key_column(tmp_path, target):
    schema = TableSchema(
        "db",
        "pairs",
        (
            Column("a", "varchar", "varchar(20)", False, "utf8mb4_bin"),
            Column("b", "int", "int", False),
            Column("v", "varchar", "varchar(40)", True),
        ),
        ("a", "b"),
        "a",
    )
    sink, options = _sink(tmp_path / "lake", target, schema)
    rows = [(f"k{i % 50}", i, "old") for i in range(2_000)]
    _append(sink, schema, rows)
    expected = {(a, b): v for a, b, v in rows}
    changes = [
        ChangeRow(schema, RowKind.UPDATE_AFTER, ("k3", 3, "new"), 0, BinlogOffset("b.1", 1)),
        ChangeRow(schema, RowKind.DELETE, ("k4", 54, None), 0, BinlogOffset("b.1", 2)),
        ChangeRow(schema, RowKind.INSERT, ("k4", 3, "made"), 0, BinlogOffset("b.1", 3)),  # a's and b's, not this pair
    ]
    sink.writer().write_changes(ChangeBatch(changes), BinlogOffset("b.1", 4), drop_split_records=False)
    expected[("k3", 3)] = "new"
    expected[("k4", 3)] = "made"
    del expected[("k4", 54)]
    held = {(a, b): v for a, b, v in lakehouse_rows(options, schema)}
    assert held == expected


@pytest.mark.parametrize("target", MERGING)
def test_compaction_rewrites_files_largely_deleted_and_drops_the_deletes_that_then_delete_nothing(tmp_path, target):
    options = {
        "sink.maintenance.delete-ratio": 0.2,
        "sink.maintenance.small-file-size": 1,
        "sink.maintenance.retention": "0s",
    }
    sink, options = _sink(tmp_path / "lake", target, **options)
    changes = Changes(sink, _filled(sink, 10_000, 4))
    changes.commit(updated=range(0, 2_500, 2))  # half of the first file's rows
    changes.commit(
        updated=range(2_500, 10_000, 20), deleted=range(0, 2_500, 8)
    )  # a quarter of those rows, a twentieth of the rest
    before = table_files(sink, SCHEMA.table_id)
    assert before.delete_files

    end = sink.table_end(SCHEMA.table_id)
    counted = _compacted_metric()
    done = sink.maintain(SCHEMA, end)
    after = table_files(sink, SCHEMA.table_id)
    assert done.compacted == 2, "the first file and the one of the first batch's rows, past the ratio"
    assert _compacted_metric() == counted + 2, "the run's metrics do not show the compaction"
    assert after.deleted_rows < before.deleted_rows
    assert sorted(before.data - after.data) == sorted(before.largely_deleted(0.2))
    assert dict(lakehouse_rows(options, SCHEMA)) == changes.expected
    assert sink.table_end(SCHEMA.table_id) == end, "maintenance moved the table's binlog position"
    stored = {str(p) for p in (tmp_path / "lake").rglob("*.parquet")}
    assert not any(path.removeprefix("file://") in stored for path in before.data - after.data), "replaced files kept"


@pytest.mark.parametrize("target", MERGING)
def test_a_table_dropped_and_made_anew_takes_the_next_commits_as_a_new_table(tmp_path, target):
    """A DROP TABLE and CREATE TABLE between batches: what the writer knew of the old table's
    files and log goes with it (a Delta log's next version is the new table's, not the old one's)."""
    sink, options = _sink(tmp_path / "lake", target)
    changes = Changes(sink, _filled(sink, 2_000, 2))
    for n in range(5):
        changes.commit(updated=range(n, 2_000, 50), value=f"v{n}")
    sink.tables.apply(DropTable(SCHEMA.table_id), {SCHEMA.table_id: SCHEMA})
    sink.tables.apply(CreateTable(SCHEMA.table_id, SCHEMA.columns, SCHEMA.row_key), {})
    changes.expected.clear()
    changes.commit(inserted=range(10), value="new")
    changes.commit(updated=[3], deleted=[4], value="newer")
    assert dict(lakehouse_rows(options, SCHEMA)) == changes.expected


def test_a_delta_log_is_checkpointed_and_a_new_run_replays_it_from_the_checkpoint(tmp_path):
    """Every hundredth version the writer checkpoints the log (delta-rs does so after its own
    commits only); a run that starts then reads the deletion vectors from the checkpoint."""
    sink, options = _sink(tmp_path / "lake", "delta")
    changes = Changes(sink, _filled(sink, 1_000, 2))
    for n in range(105):
        changes.commit(updated=[n % 40, 500 + n % 7], deleted=[900 + n % 50] if n % 3 == 0 else (), value=f"v{n}")
    log = tmp_path / "lake" / "db" / "t" / "_delta_log"
    assert list(log.glob("*.checkpoint.parquet")), "no checkpoint written"
    again, _ = _sink(tmp_path / "lake", "delta")  # a new run: the log replayed from the checkpoint
    later = Changes(again, changes.expected)
    later.at = changes.at + 1_000
    later.commit(updated=range(0, 40), deleted=[501], value="later")
    assert dict(lakehouse_rows(options, SCHEMA)) == later.expected
    files = table_files(again, SCHEMA.table_id)
    assert files.deleted_rows == files.rows - len(later.expected)


def _compacted_metric() -> float:
    """sluice_lake_files_compacted_total of db.t, as a run's /metrics would serve it."""
    registry = PipelineMetrics("p").registry
    return registry.get_sample_value("sluice_lake_files_compacted_total", {"pipeline": "p", "table": "db.t"}) or 0.0


def test_iceberg_expiry_deletes_the_manifests_and_metadata_no_kept_snapshot_reads(tmp_path):
    """A month of commits must not leave a month of manifests: with nothing retained, what
    the table's directory holds is what its current snapshot reads, and a bounded metadata log."""
    sink, options = _sink(tmp_path / "lake", "iceberg", **{"sink.maintenance.retention": "0s"})
    changes = Changes(sink, _filled(sink, 1_000, 2))
    for n in range(30):
        changes.commit(updated=range(n, 1_000, 97), value=f"v{n}")
    sink.maintain(SCHEMA, sink.table_end(SCHEMA.table_id))
    table = sink.tables.catalog.load_table(SCHEMA.table_id)
    snapshot = table.current_snapshot()
    read = {snapshot.manifest_list, *(m.manifest_path for m in snapshot.manifests(table.io))}
    stored = {f"file://{p}" for p in (tmp_path / "lake").rglob("*.avro")}
    assert stored == read, f"{len(stored - read)} manifests or manifest lists no snapshot reads"
    assert len(list((tmp_path / "lake").rglob("*.metadata.json"))) <= 101
    assert dict(lakehouse_rows(options, SCHEMA)) == changes.expected


def test_an_iceberg_commit_reads_only_the_manifests_it_has_not_read_before(tmp_path, monkeypatch):
    """Manifests never change: pyiceberg's scan planning read every one of the table's again
    for every commit, two thirds of a commit's time at 2,000,000 rows."""
    sink, options = _sink(tmp_path / "lake", "iceberg")
    changes = Changes(sink, _filled(sink, 10_000, 6))
    read: list[str] = []
    fetch = ManifestFile.fetch_manifest_entry

    def counted(manifest, io, discard_deleted=True):
        read.append(manifest.manifest_path)
        return fetch(manifest, io, discard_deleted=discard_deleted)

    monkeypatch.setattr(ManifestFile, "fetch_manifest_entry", counted)
    changes.commit(updated=_spread(10_000, 100, seed=3))
    first = len(read)
    changes.commit(updated=_spread(10_000, 100, seed=4), deleted=[1, 2])

    assert first >= 6, read
    assert len(read) - first <= 2, f"the second commit read {read[first:]}"
    assert dict(lakehouse_rows(options, SCHEMA)) == changes.expected
