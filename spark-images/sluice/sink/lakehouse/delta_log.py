"""A Delta table's transaction log, replayed and appended to where delta-rs (1.6) has no
API: its add actions with their deletion vectors, and a commit of any actions. Replay
follows the protocol's action reconciliation (a logical file is its path and its deletion
vector's unique id; the newest action on it wins); a commit is the next version's JSON file
created only if no other writer created it first, the optimistic race every Delta writer runs."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from sluice.sink.lakehouse.delta_deletion_vectors import unique_id

DELETION_VECTORS = "deletionVectors"
# Features a table of these protocol versions has without listing them (the protocol's
# "Writer Version Requirements"), written out when it moves to table features.
_WRITER_FEATURES = {
    2: ["appendOnly", "invariants"],
    3: ["checkConstraints"],
    4: ["changeDataFeed", "generatedColumns"],
    5: ["columnMapping"],
    6: ["identityColumns"],
}
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10})?\.parquet$")


class LogConflict(Exception):
    """Another writer committed the version first: replay and try again."""


@dataclass
class LogState:
    """The table as of `version`: its live files' add actions, removes kept as tombstones,
    the protocol, and each application's transaction version."""

    version: int = -1
    adds: dict[str, dict[str, Any]] = field(default_factory=dict)  # by path
    tombstones: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    protocol: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    transactions: dict[str, int] = field(default_factory=dict)

    def apply(self, action: Mapping[str, Any]) -> None:
        if (add := action.get("add")) is not None:
            self.adds[add["path"]] = dict(add)
            self.tombstones.pop((add["path"], unique_id(add.get("deletionVector"))), None)
        elif (remove := action.get("remove")) is not None:
            key = (remove["path"], unique_id(remove.get("deletionVector")))
            live = self.adds.get(remove["path"])
            if live is not None and unique_id(live.get("deletionVector")) == key[1]:
                del self.adds[remove["path"]]
            self.tombstones[key] = dict(remove)
        elif (protocol := action.get("protocol")) is not None:
            self.protocol = dict(protocol)
        elif (metadata := action.get("metaData")) is not None:
            self.metadata = dict(metadata)
        elif (txn := action.get("txn")) is not None:
            self.transactions[txn["appId"]] = int(txn["version"])

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.get("configuration") or {})

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.get("partitionColumns") or [])

    @property
    def has_deletion_vectors(self) -> bool:
        return DELETION_VECTORS in (self.protocol.get("readerFeatures") or ())

    def protocol_with_deletion_vectors(self) -> dict[str, Any]:
        """The protocol action that lets the table's files carry deletion vectors (reader 3,
        writer 7, the feature named; the features the older versions implied kept)."""
        writer = int(self.protocol.get("minWriterVersion", 2))
        reader = int(self.protocol.get("minReaderVersion", 1))
        writer_features = (
            list(self.protocol.get("writerFeatures") or [])
            if writer == 7
            else [f for version, names in _WRITER_FEATURES.items() if version <= writer for f in names]
        )
        reader_features = (
            list(self.protocol.get("readerFeatures") or [])
            if reader == 3
            else (["columnMapping"] if reader == 2 else [])
        )
        return {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": [*dict.fromkeys([*reader_features, DELETION_VECTORS])],
            "writerFeatures": [*dict.fromkeys([*writer_features, DELETION_VECTORS])],
        }


class DeltaLog:
    """One table's log: its state kept and brought up to date by the commits since."""

    def __init__(self, uri: str) -> None:
        self.filesystem, self.root = pafs.FileSystem.from_uri(uri)
        self._state: LogState | None = None

    @property
    def commits_atomically(self) -> bool:
        """Only a local (or mounted) file system creates a file only if it is absent here;
        pyarrow's object stores overwrite, and two writers could both win a version."""
        return isinstance(self.filesystem, pafs.LocalFileSystem)

    def state(self) -> LogState:
        """The table's newest state (replayed from its newest checkpoint once, then commit by commit)."""
        if self._state is None or not self._holds(self._state.version):
            self._state = self._from_checkpoint()  # first, or the table was made anew since
        while True:
            actions = self._read_commit(self._state.version + 1)
            if actions is None:
                return self._state
            for action in actions:
                self._state.apply(action)
            self._state.version += 1

    def _holds(self, version: int) -> bool:
        """Whether the log still has the version a kept state is at."""
        if version < 0:
            return True
        info = self.filesystem.get_file_info(f"{self.root}/_delta_log/{version:020d}.json")
        return info.type != pafs.FileType.NotFound or bool(self._checkpoints().get(version))

    def commit(self, version: int, actions: Sequence[Mapping[str, Any]]) -> None:
        """The actions as version `version`, unless a writer made that version first (LogConflict)."""
        log = f"{self.root}/_delta_log"
        final = f"{log}/{version:020d}.json"
        staged = f"{log}/.{version:020d}.json.{uuid.uuid4().hex}.tmp"
        with open(staged, "w", encoding="utf-8") as stream:
            stream.write("".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions))
        try:
            os.link(staged, final)  # fails if the version exists: the put-if-absent of a file system
        except FileExistsError as exc:
            raise LogConflict(f"version {version} of {self.root} was committed by another writer") from exc
        finally:
            os.unlink(staged)

    def _read_commit(self, version: int) -> list[dict[str, Any]] | None:
        try:
            with self.filesystem.open_input_stream(f"{self.root}/_delta_log/{version:020d}.json") as stream:
                text = stream.read().decode("utf-8")
        except FileNotFoundError:
            return None
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _checkpoints(self) -> dict[int, list[str]]:
        """Classic checkpoints' files by version."""
        selector = pafs.FileSelector(f"{self.root}/_delta_log", allow_not_found=True)
        checkpoints: dict[int, list[str]] = {}
        for info in self.filesystem.get_file_info(selector):
            if match := _CHECKPOINT.match(info.base_name):
                checkpoints.setdefault(int(match.group(1)), []).append(info.base_name)
        return checkpoints

    def _from_checkpoint(self) -> LogState:
        """The state at the newest classic checkpoint (one file or parts), or before version 0."""
        checkpoints = self._checkpoints()
        state = LogState()
        if not checkpoints:
            return state
        version = max(checkpoints)
        for name in sorted(checkpoints[version]):
            with self.filesystem.open_input_file(f"{self.root}/_delta_log/{name}") as stream:
                parquet = pq.ParquetFile(stream)
                kinds = [k for k in ("add", "remove", "protocol", "metaData", "txn") if k in parquet.schema_arrow.names]
                rows = parquet.read(columns=kinds).to_pylist()
            for row in rows:
                for kind in kinds:
                    if row.get(kind) is not None:
                        state.apply({kind: _from_checkpoint_row(row[kind])})
        state.version = version
        return state


def _from_checkpoint_row(action: dict[str, Any]) -> dict[str, Any]:
    """An action as JSON commits write it: maps (parquet's lists of pairs) as objects, absent fields left out."""
    out = {}
    for key, value in action.items():
        if value is None:
            continue
        if key in ("partitionValues", "tags", "configuration") and isinstance(value, list):
            value = dict(value)
        elif isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        out[key] = value
    return out
