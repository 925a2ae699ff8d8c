"""The parquet changelog's commit log: what counts as committed, what a start removes."""

from __future__ import annotations

import json

from sluice.sink.parquet import ParquetSink
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
