"""The binlog phase's reader: the reader process, started again after a lost source
connection. What was read before the loss is committed first (the caller's), then the reader
connects again from there, waiting 1 s, 2 s, 4 s ... up to 30 s between attempts, for as long
as `connect.reconnect.timeout` allows; the first item after it ends the outage."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from sluice.errors import SluiceError
from sluice.runtime.reader_process import END, Item, ReaderProcess, Transactions
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema

log = logging.getLogger(__name__)

RECONNECT_MAX_WAIT = 30.0


class ReaderSupervisor:
    def __init__(self, transactions: Transactions, reconnect_timeout: float, reconnected: Callable[[], None]) -> None:
        """`reconnected()` follows a lost connection opened again."""
        self._reader = ReaderProcess(transactions)
        self._reconnect_timeout, self._reconnected = reconnect_timeout, reconnected
        self._outage: _Outage | None = None  # the connection was lost and is being opened again

    def start(self, offset: BinlogOffset, sources: Mapping[str, TableSchema], by_gtid: bool) -> None:
        """Reads from `offset` on (a reader reading already is stopped first)."""
        self._reader.stop()
        self._reader.start(offset, sources, by_gtid)

    def get(self, timeout: float) -> Item | object | None:
        """The next item, END, or None if nothing came within `timeout` seconds."""
        item = self._reader.get(timeout)
        if self._outage is not None and item is not None and item is not END:
            self._outage.ended()
            self._outage = None
            self._reconnected()
        return item

    def lost(self) -> BaseException | None:
        """After END: the lost connection the reader may connect again after, else None
        (it ended, or failed for good: see `failure`)."""
        lost = self._reader.failure[0] if self._reader.failure else None
        return lost if isinstance(lost, SluiceError) and lost.transient else None

    def wait_for_next_attempt(self, lost: BaseException, stopping: threading.Event) -> bool:
        """Waits before the next attempt; False once the budget is spent (`lost` then says
        how long the reader tried) or the run stops meanwhile."""
        self._outage = self._outage or _Outage(self._reconnect_timeout)
        wait = self._outage.next_wait(lost)
        if wait is None or stopping.wait(wait):
            return False
        self._reader.failure.clear()
        return True

    @property
    def failure(self) -> BaseException | None:
        return self._reader.failure[0] if self._reader.failure else None

    def stop(self) -> None:
        self._reader.stop()


class _Outage:
    """A lost source connection: the waits between attempts to open it again, and the budget."""

    def __init__(self, budget: float) -> None:
        self.started, self.budget, self.attempts = time.monotonic(), budget, 0

    def next_wait(self, lost: BaseException) -> float | None:
        """Seconds to wait before the next attempt, or None once the budget is spent (the
        failure then stands, naming how long the reader tried)."""
        elapsed = time.monotonic() - self.started
        wait = min(2.0**self.attempts, RECONNECT_MAX_WAIT)
        if elapsed + wait > self.budget:
            lost.args = (f"{lost}; reconnecting for {elapsed:.0f}s did not help (connect.reconnect.timeout)",)
            return None
        self.attempts += 1
        log.warning("%s; reconnecting in %.0fs (attempt %d, %.0fs so far)", lost, wait, self.attempts, elapsed)
        return wait

    def ended(self) -> None:
        log.warning(
            "reconnected to the source after %.0fs and %d attempts", time.monotonic() - self.started, self.attempts
        )
