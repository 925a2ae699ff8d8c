"""The binlog reader in a process of its own, reading ahead of the committing thread.

Reading the binlog and committing rows are both Python work: in one process the two take
turns on one core (the GIL). Here a forked child reads the binlog (the replication
protocol, every event's parsing, table maps, transactions, DDL) and the committing thread
receives its transactions through a pipe, so the two use two cores.

The child holds nothing that must outlive it: it only reads. Stopping it is killing it,
and what it read ahead is dropped; the committing side commits only what it received and
records where that ends, so exactly-once stays the committing side's alone. The child
dies with its parent (a SIGKILLed driver leaves no reader behind), and ignores Ctrl-C and
SIGTERM (a stop signals the whole process group): the parent decides when reading stops.

What crosses the pipe is the rows events' bytes, in batches: the committing side decodes
them, because making the values (Decimal, datetime, str) costs the same wherever it
happens, and pickling them costs as much again. Each row image decoder crosses once, as
what it is made from.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import fcntl
import multiprocessing
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.connection import Connection
from typing import Any

from sluice.binlog.rows.event_reader import RowsEvent
from sluice.binlog.rows.row_image_decoder import RowImageDecoder
from sluice.binlog.transaction_reader import Heartbeat, Transaction
from sluice.errors import SourceError
from sluice.event.schema_change import SchemaChange
from sluice.source.offset import BinlogOffset
from sluice.source.schema import TableSchema

Item = Transaction | SchemaChange | Heartbeat
# transactions(offset, schemas, by_gtid, before_waiting): what the child reads, from where,
# with which schemas; before_waiting is called before the reader waits for the server.
Transactions = Callable[[BinlogOffset, Mapping[str, TableSchema], bool, Callable[[], None]], Iterator[Item]]

END = object()  # `get` gives it once the reader has nothing more: its bounded run ended, or it failed
SEND_AT_ONCE = 256  # items pickled into one message at most
SEND_BYTES = 1 << 20  # row images pickled into one message at most: the parent unpickles one while the next comes

_PR_SET_PDEATHSIG = 1  # prctl(2)
_F_SETPIPE_SZ = 1031  # fcntl(2), Linux


class ReaderProcess:
    """The child reading the binlog, and the parent's end of its pipe."""

    def __init__(self, transactions: Transactions) -> None:
        self._transactions = transactions
        self._process: Any = None
        self._pipe: Connection | None = None
        self._received: collections.deque = collections.deque()
        self._decoders: dict[int, RowImageDecoder] = {}  # by the child's number for each
        self.failure: list[BaseException] = []

    def start(self, offset: BinlogOffset, sources: Mapping[str, TableSchema], by_gtid: bool) -> None:
        context = multiprocessing.get_context("fork")  # the reader's closure and schemas as they are
        receiving, sending = context.Pipe(duplex=False)
        with contextlib.suppress(OSError):  # Linux: a message of SEND_BYTES crosses in one write, not sixteen
            fcntl.fcntl(sending.fileno(), _F_SETPIPE_SZ, SEND_BYTES)
        arguments = (self._transactions, offset, sources, by_gtid, sending, os.getpid())
        self._process = context.Process(target=_read, args=arguments, name="binlog-reader", daemon=True)
        self._process.start()
        sending.close()  # the child's end: the parent sees EOF if the child dies
        self._pipe, self._received, self._decoders = receiving, collections.deque(), {}

    def get(self, timeout: float) -> Item | object | None:
        """The next item, END, or None if nothing came within `timeout` seconds."""
        while True:
            if not self._received:
                assert self._pipe is not None
                if not self._pipe.poll(timeout):
                    return None
                try:
                    self._received.extend(pickle.loads(self._pipe.recv_bytes()))
                except EOFError:
                    self._process.join()
                    code = self._process.exitcode
                    self.failure.append(SourceError(f"the binlog reader process ended unexpectedly (exit code {code})"))
                    return END
            packed = self._received.popleft()
            if packed[0] != "decoder":
                return self._unpacked(packed)
            _, number, columns, schema = packed
            self._decoders[number] = RowImageDecoder(columns, schema)

    def _unpacked(self, packed: tuple) -> Item | object:
        kind = packed[0]
        if kind == "transaction":
            _, events, end, timestamp, received = packed
            decoders = self._decoders
            rows_events = [
                RowsEvent(t, k, decoders[d], body, present, BinlogOffset(*start), e, first, ts)
                for t, k, d, body, present, start, e, first, ts in events
            ]
            return Transaction(rows_events, BinlogOffset(*end), timestamp, received)
        if kind == "item":
            return packed[1]
        if kind == "failed":
            self.failure.append(packed[1])
        return END

    def stop(self) -> None:
        """Kills the child, dropping what it read ahead."""
        if self._process is not None:
            self._process.kill()
            self._process.join()
            self._process = None
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None


def _read(
    transactions: Transactions,
    offset: BinlogOffset,
    sources: Mapping[str, TableSchema],
    by_gtid: bool,
    pipe: Connection,
    parent: int,
) -> None:
    """The child: reads into an outbox, which it pickles into the pipe in batches."""
    _die_with_parent(parent)
    # Ctrl-C and a stop (SIGTERM to the driver's process group) are the parent's to handle:
    # it commits what was read, then kills this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    outbox = _Outbox(pipe)
    numbers: dict[int, tuple[int, RowImageDecoder]] = {}  # by id(); holding each keeps its id unique
    try:
        # What was read goes before the reader waits for more.
        for item in transactions(offset, sources, by_gtid, outbox.send):
            for packed, size in _packed(item, numbers):
                outbox.put(packed, size)
        outbox.put(("end",), 0)
    except BaseException as exc:  # noqa: BLE001 - handed to the committing side
        outbox.put(("failed", _picklable(exc)), 0)
    outbox.send()


class _Outbox:
    """What the child read and has not sent yet: one message once it holds SEND_BYTES of
    row images or SEND_AT_ONCE items, and whatever it holds when the reader is about to
    wait for the server (the replication connection's before_waiting). A full pipe holds the
    reader up: it reads ahead of the committing side by a pipe and a message at most."""

    def __init__(self, pipe: Connection) -> None:
        self._pipe = pipe
        self._items: list[tuple] = []
        self._size = 0

    def put(self, packed: tuple, size: int) -> None:
        self._items.append(packed)
        self._size += size
        if self._size >= SEND_BYTES or len(self._items) >= SEND_AT_ONCE:
            self.send()

    def send(self) -> None:
        if self._items:
            self._pipe.send_bytes(pickle.dumps(self._items, protocol=pickle.HIGHEST_PROTOCOL))
            self._items, self._size = [], 0


def _packed(item: Item, numbers: dict[int, tuple[int, RowImageDecoder]]) -> list[tuple[tuple, int]]:
    """The item as tuples, after what makes each decoder it uses that was not sent yet;
    each with the bytes of row images it holds."""
    if not isinstance(item, Transaction):
        return [(("item", item), 0)]
    packed: list[tuple[tuple, int]] = []
    events = []
    size = 0
    for event in item.events:
        known = numbers.get(id(event.decoder))
        if known is None:
            known = numbers[id(event.decoder)] = (len(numbers), event.decoder)
            packed.append((("decoder", known[0], event.decoder.columns, event.decoder.schema), 0))
        events.append((*event[:2], known[0], *event[3:5], tuple(event.start), *event[6:]))
        size += len(event.body)
    packed.append((("transaction", events, tuple(item.end), item.timestamp, item.received), size))
    return packed


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any exception that cannot cross keeps its message
        return SourceError(f"binlog reader failed: {type(exc).__name__}: {exc}")
    return exc


def _die_with_parent(parent: int) -> None:
    """Linux kills the child when its parent dies, SIGKILL included; a parent that died
    before this was set is seen in the child's new parent."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)
