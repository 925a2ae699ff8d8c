"""Progress for long work: splits done/total, rows, rows/s, time left; position and lag.

On a terminal it redraws one line; elsewhere (CI logs, kubectl logs) it prints a line at
most every few seconds, so logs stay readable. The same progress goes to the pipeline's
metrics (runtime/pipeline_metrics.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from sluice.coordinator.schema_change import Step
from sluice.event.row_change import RowKind
from sluice.runtime.pipeline_metrics import CHANGE_KINDS, PipelineMetrics
from sluice.source.offset import BinlogOffset


class SnapshotProgress:
    def __init__(
        self,
        total_splits: int,
        done_splits: int,
        done_rows: int,
        metrics: PipelineMetrics,
        out: TextIO | None = None,
    ) -> None:
        self.metrics = metrics
        self.total = total_splits
        self.done = done_splits
        self.resumed_from = done_splits
        self.rows = 0
        self.rows_before = done_rows
        self.out = out or sys.stderr
        self.started = time.monotonic()
        self._tty = self.out.isatty()
        self._last_print = 0.0

    def split_finished(self, table_id: str, rows: int) -> None:
        self.done += 1
        self.rows += rows
        self.metrics.split_finished(table_id, rows)
        if self.done < self.total:  # the last one gets the final line
            self.show()

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.rows / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        return (
            f"snapshot: {self.done}/{self.total} splits, {self.rows_before + self.rows:,} rows, "
            f"{self.rate():,.0f} rows/s{self._time_left()}"
        )

    def _time_left(self) -> str:
        """At this run's pace of splits (a plan's splits hold about the same rows)."""
        read = self.done - self.resumed_from
        if not read or self.done >= self.total:
            return ""
        left = (time.monotonic() - self.started) / read * (self.total - self.done)
        minutes, seconds = divmod(round(left), 60)
        return f", {minutes}m{seconds:02d}s left" if minutes else f", {seconds}s left"

    def resuming(self) -> None:
        if self.resumed_from:
            self.out.write(f"snapshot: resuming, {self.resumed_from} of {self.total} splits already finished\n")

    def stopped(self) -> None:
        self.out.write(f"snapshot: stopped; the next run resumes with the {self.total - self.done} splits left\n")

    def note(self, text: str) -> None:
        _note(self.out, self._tty, f"snapshot: {text}")

    def show(self, final: bool = False) -> None:
        now = time.monotonic()
        if final:
            self.out.write(
                ("\r" if self._tty else "") + self.line() + f" ({self.done - self.resumed_from} read by this run)\n"
            )
            self.out.flush()
            return
        if self._tty:
            self.out.write("\r" + self.line())
            self.out.flush()
        elif now - self._last_print >= 2.0:
            self.out.write(self.line() + "\n")
            self.out.flush()
            self._last_print = now


class BinlogProgress:
    """Position, row changes and lag of the binlog phase, on one redrawn line or periodic
    lines. A row change is an insert, an update or a delete, as sluice_changes_applied_total
    counts them (an update's before and after images are one change)."""

    def __init__(
        self, on_lag: Callable[[float], None] | None, metrics: PipelineMetrics, out: TextIO | None = None
    ) -> None:
        self.on_lag = on_lag  # where else the lag is shown (the CdcPipeline's status)
        self.metrics = metrics
        self.changes = 0
        self.offset: BinlogOffset | None = None
        self.lag = 0.0
        self.started = time.monotonic()
        self._last = 0.0
        self._out = out or sys.stderr
        self._tty = self._out.isatty()

    def committed(
        self,
        offset: BinlogOffset,
        changes: Mapping[tuple[str, RowKind], int],
        lag: float,
        seconds: float | None = None,
    ) -> None:
        """After a commit of `changes` (rows by table and kind) that took `seconds`, or a
        heartbeat with nothing pending (no changes, seconds None)."""
        self.changes += sum(n for (_, kind), n in changes.items() if kind in CHANGE_KINDS)
        self.offset = offset
        self.lag = lag
        if self.on_lag is not None:
            self.on_lag(lag)
        self.metrics.binlog_committed(offset, changes, lag, seconds)
        self.show()

    def reconnected(self) -> None:
        self.metrics.reconnected()

    def schema_change(self, step: Step) -> None:
        """A schema change's step as recorded."""
        self.metrics.schema_change_waiting(step is Step.AWAITING_APPROVAL)
        if step is Step.APPLIED:
            self.metrics.schema_change_applied()

    def show(self, final: bool = False) -> None:
        if self.offset is None:
            return
        now = time.monotonic()
        where = "stopped at" if final else "at"
        line = f"binlog: {where} {self.offset}, {self.changes:,} row changes, lag {self.lag:.1f}s"
        if self._tty:
            self._out.write("\r" + line + ("\n" if final else ""))
        elif final or now - self._last >= 2.0:
            self._out.write(line + "\n")
            self._last = now
        self._out.flush()

    def note(self, line: str) -> None:
        """A line of its own, between progress lines (schema change steps)."""
        _note(self._out, self._tty, line)


def _note(out: TextIO, tty: bool, line: str) -> None:
    """A line of its own: on a terminal it replaces the redrawn progress line, which the
    next update draws again below it."""
    out.write(("\r\033[K" if tty else "") + line + "\n")
    out.flush()
