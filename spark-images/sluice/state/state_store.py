"""Where a pipeline's state lives: the StateStore interface, and the state directory the
local runner uses (the operator adds a store that keeps it in the CdcPipeline's status).

A state directory is one JSON document, replaced atomically (write, fsync, rename), and a
journal of small updates appended between replacements. A crash at any instant leaves
either the old document or the new one, never half of one; a journal line cut short by a
crash is ignored (its update was not acknowledged). The journal is what keeps a snapshot
of many splits from rewriting the whole plan after each finished split, which would cost
O(splits²) bytes.
"""

from __future__ import annotations

import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sluice.atomic_file import write_json_atomically
from sluice.errors import SluiceError
from sluice.snapshot.snapshot_split_assigner import FinishedSplit
from sluice.source.offset import BinlogOffset
from sluice.state.pipeline_state import STATE_VERSION, PipelineState

STATE_FILE = "state.json"
JOURNAL_FILE = "journal.jsonl"
RUN_FILE = "run.json"  # the last run's process, lag and error, for `sluice status`: not state
RUN_WRITE_SECONDS = 2.0


class StateStore(ABC):
    """Saves the whole state at phase changes, and records the frequent small updates
    (a finished split, a committed binlog offset) without rewriting it."""

    where: str  # names the store in messages: "--state-dir .sluice/orders"
    fresh_start: str  # how a user starts over: "run with a new --state-dir"

    @abstractmethod
    def load(self) -> PipelineState | None:
        """The saved state with every recorded update in it; None before the first save."""

    @abstractmethod
    def save(self, state: PipelineState) -> None: ...

    @abstractmethod
    def record_split_finished(self, split_id: str, finished: FinishedSplit) -> None: ...

    @abstractmethod
    def record_binlog_offset(self, offset: BinlogOffset) -> None: ...

    @abstractmethod
    def record_lag(self, seconds: float) -> None:
        """The binlog reader's lag, where the store shows progress."""

    def report_adoption(self, message: str) -> None:  # noqa: B027 - optional hook
        """That the state was lost and taken over from the target's records (the operator
        turns it into an `Adopted` Event)."""

    def report_failure(self, message: str, retriable: bool = False, reason: str = "") -> None:  # noqa: B027
        """Why the run stopped (the operator's Degraded condition, `sluice status`); `reason`
        names the kind of failure where the conditions should (PreflightFailed)."""


class DirectoryStateStore(StateStore):
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.where = f"--state-dir {self.directory}"
        self.fresh_start = "run with a new --state-dir"
        self.path = self.directory / STATE_FILE
        self.journal = self.directory / JOURNAL_FILE
        self._run: dict[str, Any] = {}
        self._run_written = 0.0
        self._run_pending = False  # a lag the throttle held back: written with the next save

    def load(self) -> PipelineState | None:
        data = self.load_document()
        return PipelineState.from_json(data) if data is not None else None

    def load_document(self) -> dict[str, Any] | None:
        """The state's JSON form (what `load` reads), for tools and tests."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise SluiceError(f"--state-dir {self.directory}: {STATE_FILE} is unreadable: {exc}") from exc
        if not isinstance(data, dict) or "version" not in data or "pipeline" not in data:
            raise SluiceError(
                f"--state-dir {self.directory}: {STATE_FILE} is not a Sluice pipeline state; "
                "give the pipeline a state directory of its own"
            )
        if data.get("version") != STATE_VERSION:
            raise SluiceError(
                f"--state-dir {self.directory}: state version {data.get('version')} is not "
                f"{STATE_VERSION}; use a state directory written by this Sluice version"
            )
        for path, value in self._journal():
            _set(data, path, value)
        return data

    def save(self, state: PipelineState) -> None:
        """Replaces the document (which holds every journalled update), then the journal."""
        write_json_atomically(self.path, state.to_json())
        self.journal.unlink(missing_ok=True)  # a crash before this replays updates already in
        if self._run_pending:
            self._write_run()

    def record_split_finished(self, split_id: str, finished: FinishedSplit) -> None:
        self._append(("snapshot", "finished", split_id), finished.to_json())

    def record_binlog_offset(self, offset: BinlogOffset) -> None:
        self._append(("binlog", "offset"), offset.to_json())

    def record_lag(self, seconds: float) -> None:
        """Kept in the run record (at most every RUN_WRITE_SECONDS), for `sluice status`."""
        self._run.update(lag_seconds=round(seconds, 3), lag_at=time.time())
        self._run_pending = True
        if time.monotonic() - self._run_written >= RUN_WRITE_SECONDS:
            self._write_run()

    def report_running(self) -> None:
        """This process runs the pipeline now (an error of an earlier run is gone with it)."""
        self._run = {"pid": os.getpid(), "started": time.time()}
        self._write_run()

    def report_failure(self, message: str, retriable: bool = False, reason: str = "") -> None:
        self._run.update(error=message, error_at=time.time())
        self._write_run()

    def report_stopped(self) -> None:
        self._run["stopped"] = time.time()
        self._write_run()

    def run_record(self) -> dict[str, Any]:
        """The last run's record ({} if none was kept)."""
        try:
            record = json.loads((self.directory / RUN_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def _write_run(self) -> None:
        """Replaced in one rename, not synced: losing it to a crash loses no data."""
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f".{RUN_FILE}-{os.getpid()}"
        temporary.write_text(json.dumps(self._run))
        os.replace(temporary, self.directory / RUN_FILE)
        self._run_written, self._run_pending = time.monotonic(), False

    def _append(self, path: Sequence[str], value: Any) -> None:
        """Records `document[path[0]]...[path[-1]] = value` durably, in one line."""
        with self.journal.open("a") as f:
            f.write(json.dumps([list(path), value], separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _journal(self) -> Iterator[tuple[list[str], Any]]:
        try:
            lines = self.journal.read_text().split("\n")
        except FileNotFoundError:
            return
        for line in lines:
            try:
                path, value = json.loads(line)
            except ValueError:
                continue  # the empty tail, or a line a crash cut short
            yield path, value


def _set(document: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        document = document.setdefault(key, {})
    document[path[-1]] = value
