"""The parquet changelog's commit log: what counts as committed, what a start removes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sluice.sink.parquet import CommitLog, ParquetSink
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema

SCHEMA = TableSchema("db", "t", (Column("id", "int", "int", False),), ("id",), "id")


def _lake(tmp_path, entries: dict[str, dict], directories: list[str]):
    lake = tmp_path / "lake"
    (lake / "_sluice_log").mkdir(parents=True)
    for name, entry in entries.items():
        (lake / "_sluice_log" / f"{name}.json").write_text(json.dumps(entry))
    for directory in directories:
        (lake / "db" / "t" / directory).mkdir(parents=True)
    return lake


def test_a_start_removes_only_uncommitted_attempts_of_its_own_naming(tmp_path):
    lake = _lake(
        tmp_path,
        {
            "snapshot-000000-aaaaaaaa": {"directories": ["db/t/snapshot-000000-aaaaaaaa"], "splits": {}},
            "binlog": {"commit": 2, "end": {"file": "mysql-bin.000001", "pos": 900}},
        },
        [
            "snapshot-000000-aaaaaaaa",
            "snapshot-000003-bbbbbbbb",  # a crashed snapshot job
            "binlog-000000000002",
            "binlog-000000000003",  # a crashed binlog commit
            "notes-of-someone",
        ],
    )
    sink = ParquetSink({"path": str(lake)})
    sink.prepare([SCHEMA])

    left = sorted(p.name for p in (lake / "db" / "t").iterdir())
    assert left == ["binlog-000000000002", "notes-of-someone", "snapshot-000000-aaaaaaaa"]
    assert sink.writer().committed_binlog_offset() == BinlogOffset("mysql-bin.000001", 900)


def test_a_log_of_one_entry_per_commit_keeps_its_commits(tmp_path):
    """Sluice 0.1 wrote an entry per binlog commit and one for position-only commits."""
    lake = _lake(
        tmp_path,
        {
            "binlog-000000000001": {"kind": "binlog", "commit": 1, "end": {"file": "mysql-bin.000001", "pos": 500}},
            "binlog-000000000002": {"kind": "binlog", "commit": 2, "end": {"file": "mysql-bin.000001", "pos": 700}},
            "binlog-idle": {"kind": "idle", "end": {"file": "mysql-bin.000001", "pos": 800}},
        },
        ["binlog-000000000001", "binlog-000000000002", "binlog-000000000003"],
    )
    sink = ParquetSink({"path": str(lake)})
    sink.prepare([SCHEMA])

    assert sorted(p.name for p in (lake / "db" / "t").iterdir()) == ["binlog-000000000001", "binlog-000000000002"]
    writer = sink.writer()
    assert writer.committed_binlog_offset() == BinlogOffset("mysql-bin.000001", 800)
    assert sink.log.last_binlog_commit() == 2  # the next commit is 3


def test_a_reader_sees_every_snapshot_directory_while_the_writer_compacts_the_log(tmp_path, monkeypatch):
    """A changelog reader (a tool, a test) reads the log while the pipeline compacts it:
    the snapshot jobs' entries it listed may be gone when it opens them."""
    jobs = {
        f"snapshot-00000{i}-aaaaaaa{i}": {"directories": [f"db/t/snapshot-00000{i}-aaaaaaa{i}"], "splits": {}}
        for i in range(3)
    }
    lake = _lake(tmp_path, {**jobs, "binlog": {"commit": 1, "end": {"file": "b.000001", "pos": 4}}}, list(jobs))
    writer = CommitLog(lake)
    writer.snapshot_directories()  # the pipeline's process has read its log at start
    reader = CommitLog(lake)
    read_text = Path.read_text
    compacted = []

    def compact_before_the_first_read(path, *args, **kwargs):
        if not compacted:
            compacted.append(True)
            writer.compact_snapshot()
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", compact_before_the_first_read)

    assert reader.snapshot_directories() == {f"db/t/{name}" for name in jobs}
    assert compacted and not any(name.startswith("snapshot-0") for name in os.listdir(lake / "_sluice_log"))
