"""Merge-on-read commits into Delta tables: a batch's changed keys marked deleted in their
files' deletion vectors and its rows added as a new file, in one commit of the log, so its
bytes follow its changes (delta-rs's MERGE rewrites every file a changed key is in). And the
maintenance deletion vectors need: files whose rows are largely deleted rewritten without
them, and vector files no kept version reads deleted (delta-rs's VACUUM leaves them)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from sluice.sink.lakehouse.delta_deletion_vectors import read_vector, unique_id, write_vectors, z85_decode
from sluice.sink.lakehouse.delta_files import write_data_file, write_data_files
from sluice.sink.lakehouse.delta_log import DeltaLog, LogState
from sluice.sink.lakehouse.key_positions import KeyedFile, KeyPositions, deleted_keys
from sluice.sink.lakehouse.table_format import EPOCH, PIPELINE, TableCommit
from sluice.source.schema import TableSchema

ENABLED = "delta.enableDeletionVectors"  # a table whose configuration says false is merged copy-on-write
REWRITE_BYTES = 512 << 20  # data files rewritten in one compaction round at most: its memory
CHECKPOINT_INTERVAL = 100  # versions between checkpoints (delta-rs's default; its own commits write them)
CLIENT = "sluice"


def merges_on_read(log: DeltaLog, state: LogState) -> bool:
    """Whether the table takes deletion vectors here: a file system that creates a version's
    file only if it is absent, and a table whose configuration does not turn them off."""
    return log.commits_atomically and state.configuration.get(ENABLED, "true").lower() != "false"


def row_delta(
    log: DeltaLog,
    cache: KeyPositions,
    uri: str,
    schema: TableSchema,
    commit: TableCommit,
    fence: Callable[[int], None],
) -> int:
    """One commit: the live rows of the commit's keys marked deleted, its rows added; the
    version it made. A table first given a deletion vector moves to reader 3, writer 7."""
    state = log.state()
    record = commit.record
    if PIPELINE in record:
        fence(state.transactions.get(_app_id(record), 0))
    rows = commit.rows
    assert rows is not None
    keys = deleted_keys(schema, commit)
    found = cache.find(_keyed_files(log, state, keys.schema, cache), keys)
    now = int(time.time() * 1000)
    actions = _header(record, "MERGE", now)
    if found and not state.has_deletion_vectors:
        actions.append({"protocol": state.protocol_with_deletion_vectors()})
    paths = list(found)
    vectors = [np.union1d(_deleted(log, state.adds[p], cache), found[p]) for p in paths]
    for path, descriptor in zip(paths, write_vectors(log.filesystem, log.root, vectors) if paths else [], strict=True):
        actions += _replaced(state.adds[path], now, {**state.adds[path], "deletionVector": descriptor})
    if rows.num_rows:
        for data_file in write_data_files(uri, state.partition_columns, schema.row_key, rows):
            actions.append({"add": data_file.add_action(now)})
    version = state.version + 1
    log.commit(version, actions)
    return version


def plan_rewrite(state: LogState, ratio: float) -> list[dict[str, Any]]:
    """The add actions of files whose deletion vectors delete at least `ratio` of their rows."""
    chosen, size = [], 0
    for add in sorted(state.adds.values(), key=lambda a: a["path"]):
        vector = add.get("deletionVector")
        records = json.loads(add.get("stats") or "{}").get("numRecords")
        if vector and records and vector["cardinality"] >= ratio * records:
            if chosen and size + add["size"] > REWRITE_BYTES:
                break
            chosen.append(add)
            size += add["size"]
    return chosen


def rewrite(
    log: DeltaLog,
    cache: KeyPositions,
    adds: Sequence[dict[str, Any]],
    schema: TableSchema,
    record: Mapping[str, str],
    fence: Callable[[int], None],
) -> int:
    """The files' live rows written again (each in its own partition), in one commit that
    replaces them; the files rewritten."""
    state = log.state()
    if PIPELINE in record:
        fence(state.transactions.get(_app_id(record), 0))
    now = int(time.time() * 1000)
    actions = _header(record, "OPTIMIZE", now)
    adds = [add for add in adds if state.adds.get(add["path"]) == add]  # one changed since: the next round looks again
    if not adds:
        return 0
    for add in adds:
        rows = _read(log, add["path"])
        keep = np.ones(rows.num_rows, dtype=bool)
        keep[_deleted(log, add, cache)] = False
        directory = add["path"].rpartition("/")[0]
        written = write_data_file(
            log.filesystem,
            log.root,
            f"{unquote(directory)}/" if directory else "",
            rows.filter(pa.array(keep)),
            dict(add.get("partitionValues") or {}),
            schema.row_key,
        )
        actions += _replaced(add, now, written.add_action(now))
    log.commit(state.version + 1, actions)
    return len(adds)


def unread_vector_files(log: DeltaLog, retention: float) -> list[str]:
    """Deletion vector files at the table's root no live file and no tombstone within the
    retention refers to, and written before it (a commit in flight may be about to)."""
    state = log.state()
    cutoff = (time.time() - retention) * 1000
    kept = [a.get("deletionVector") for a in state.adds.values()]
    kept += [r.get("deletionVector") for r in state.tombstones.values() if r.get("deletionTimestamp", 0) > cutoff]
    names = {_vector_file(d) for d in kept if d}
    unread = []
    for info in log.filesystem.get_file_info(pafs.FileSelector(log.root)):
        name = info.base_name
        if name.startswith("deletion_vector_") and name not in names and info.mtime_ns / 1e6 < cutoff:
            log.filesystem.delete_file(info.path)
            unread.append(info.path)
    return unread


def checkpoint_due(version: int) -> bool:
    return version > 0 and version % CHECKPOINT_INTERVAL == 0


def _header(record: Mapping[str, str], operation: str, now: int) -> list[dict[str, Any]]:
    """The commit's provenance, carrying the record, and its pipeline's transaction (the fence)."""
    actions: list[dict[str, Any]] = [
        {"commitInfo": {"timestamp": now, "operation": operation, "clientVersion": CLIENT, **record}}
    ]
    if PIPELINE in record:
        actions.append({"txn": {"appId": _app_id(record), "version": int(record[EPOCH]), "lastUpdated": now}})
    return actions


def _replaced(old: dict[str, Any], now: int, new: dict[str, Any]) -> list[dict[str, Any]]:
    """A logical file removed (its deletion vector named: a file is its path and vector) and its successor added."""
    remove = {
        "path": old["path"],
        "deletionTimestamp": now,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": old.get("partitionValues") or {},
        "size": old["size"],
    }
    if old.get("deletionVector"):
        remove["deletionVector"] = old["deletionVector"]
    if new.get("deletionVector") and new.get("stats"):  # bounds over rows some of which are gone: wide now
        new = {**new, "stats": json.dumps({**json.loads(new["stats"]), "tightBounds": False}, separators=(",", ":"))}
    return [{"remove": remove}, {"add": {**new, "dataChange": True}}]


def _app_id(record: Mapping[str, str]) -> str:
    return f"sluice:{record[PIPELINE]}"


def _keyed_files(log: DeltaLog, state: LogState, keys: pa.Schema, cache: KeyPositions) -> Iterator[KeyedFile]:
    first = keys.names[0]
    partitions = set(state.partition_columns)
    for add in list(state.adds.values()):
        stats = json.loads(add.get("stats") or "{}")
        low, high = stats.get("minValues", {}).get(first), stats.get("maxValues", {}).get(first)
        # Integers' bounds only: writers cut text bounds to a prefix (the protocol lets them),
        # and a cut maximum is below the values it stands for.
        exact = isinstance(low, int) and isinstance(high, int) and first not in partitions
        yield KeyedFile(
            add["path"],
            (low, high) if exact else None,
            lambda add=add: _key_columns(log, add, keys, partitions),
            lambda add=add: _deleted(log, add, cache),
        )


def _key_columns(log: DeltaLog, add: dict[str, Any], keys: pa.Schema, partitions: set[str]) -> pa.Table:
    """The file's key columns; one Delta keeps as a partition value is that value on every row."""
    in_file = [name for name in keys.names if name not in partitions]
    table = _read(log, add["path"], in_file)
    columns = []
    for kind in keys:
        if kind.name in partitions:
            value = (add.get("partitionValues") or {}).get(kind.name)
            columns.append(pa.array([value] * table.num_rows, pa.string()).cast(kind.type))
        else:
            columns.append(table.column(kind.name).cast(kind.type))
    return pa.table(columns, names=keys.names)


def _deleted(log: DeltaLog, add: dict[str, Any], cache: KeyPositions) -> np.ndarray:
    vector = add.get("deletionVector")
    if not vector:
        return np.zeros(0, np.int64)
    key = ("vector", add["path"], unique_id(vector))
    return cache.cached(key, lambda: read_vector(log.filesystem, log.root, vector))


def _read(log: DeltaLog, path: str, columns: list[str] | None = None) -> pa.Table:
    """A data file of the log's table by its add action's path (relative and URI-escaped, or absolute)."""
    if "://" in path:
        filesystem, where = pafs.FileSystem.from_uri(path)
    else:
        filesystem, where = log.filesystem, f"{log.root}/{unquote(path)}"
    with filesystem.open_input_file(where) as stream:
        return pq.read_table(stream, columns=columns)


def _vector_file(descriptor: Mapping[str, Any]) -> str:
    """The file name a descriptor stored at the table's root refers to ('' for one stored otherwise)."""
    where = descriptor.get("pathOrInlineDv", "")
    if descriptor.get("storageType") != "u" or len(where) != 20:
        return ""
    return f"deletion_vector_{uuid.UUID(bytes=z85_decode(where))}.bin"
