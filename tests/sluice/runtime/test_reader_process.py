"""The binlog reader's process: what it reads reaches the committing side in order, its
failures reach it as errors that name the cause, and it never outlives its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sluice.binlog.transaction_reader import Heartbeat
from sluice.errors import SourceError
from sluice.runtime.reader_process import END, ReaderProcess
from sluice.source.offset import BinlogOffset


def _heartbeats(count: int, then: BaseException | None = None):
    def transactions(start, sources, by_gtid, before_waiting):  # noqa: ANN001, ANN202 - the reader's signature
        for i in range(count):
            yield Heartbeat(BinlogOffset(start.file, start.pos + i))
        if then is not None:
            raise then

    return transactions


def _forever(start, sources, by_gtid, before_waiting):  # noqa: ANN001, ANN202
    while True:
        yield Heartbeat(start)
        time.sleep(0.01)


def _drain(reader: ReaderProcess) -> list:
    items = []
    while (item := reader.get(timeout=10)) is not END:
        assert item is not None, "the reader sent nothing for 10 s"
        items.append(item)
    return items


def test_what_the_child_reads_arrives_in_order_and_ends_with_END():
    reader = ReaderProcess(_heartbeats(1000))
    reader.start(BinlogOffset("mysql-bin.000007", 4), {}, False)
    try:
        items = _drain(reader)
    finally:
        reader.stop()
    assert [item.end.pos for item in items] == list(range(4, 1004))
    assert reader.failure == []


def test_a_failure_in_the_child_reaches_the_parent_after_what_was_read_before_it():
    reader = ReaderProcess(_heartbeats(3, then=SourceError("source.server-id: server id 7 is already used")))
    reader.start(BinlogOffset("mysql-bin.000001", 4), {}, False)
    try:
        assert len(_drain(reader)) == 3
    finally:
        reader.stop()
    assert [str(e) for e in reader.failure] == ["source.server-id: server id 7 is already used"]


def test_an_error_that_cannot_be_pickled_keeps_its_type_and_message():
    class Local(Exception):  # a local class: pickle cannot find it
        pass

    reader = ReaderProcess(_heartbeats(0, then=Local("decoder went wrong")))
    reader.start(BinlogOffset("mysql-bin.000001", 4), {}, False)
    try:
        assert _drain(reader) == []
    finally:
        reader.stop()
    (failure,) = reader.failure
    assert isinstance(failure, SourceError)
    assert "Local: decoder went wrong" in str(failure)


def test_a_child_that_dies_is_an_error_naming_its_exit_code():
    def dies(start, sources, by_gtid, before_waiting):  # noqa: ANN001, ANN202
        yield Heartbeat(start)
        os._exit(3)

    reader = ReaderProcess(dies)
    reader.start(BinlogOffset("mysql-bin.000001", 4), {}, False)
    try:
        items = _drain(reader)
    finally:
        reader.stop()
    assert len(items) <= 1  # the heartbeat may still be in the child's outbox when it exits
    assert [str(e) for e in reader.failure] == ["the binlog reader process ended unexpectedly (exit code 3)"]


def test_stop_kills_a_child_that_is_still_reading():
    reader = ReaderProcess(_forever)
    reader.start(BinlogOffset("mysql-bin.000001", 4), {}, False)
    assert isinstance(reader.get(timeout=10), Heartbeat)
    pid = reader._process.pid
    reader.stop()
    assert not _alive(pid)


def test_a_sigterm_to_the_process_group_leaves_the_stopping_to_the_parent():
    """Stopping a Spark driver signals its whole process group: the parent commits what it
    read and stops the child itself; a child gone first would fail that clean stop."""

    reader = ReaderProcess(_forever)
    reader.start(BinlogOffset("mysql-bin.000001", 4), {}, False)
    assert isinstance(reader.get(timeout=10), Heartbeat)
    os.kill(reader._process.pid, signal.SIGTERM)
    time.sleep(0.5)
    items = [reader.get(timeout=1) for _ in range(20)]

    assert all(isinstance(item, Heartbeat) for item in items) and not reader.failure
    reader.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's prctl")
def test_the_child_dies_with_a_sigkilled_parent(tmp_path):
    script = textwrap.dedent(
        """
        import time
        from sluice.binlog.transaction_reader import Heartbeat
        from sluice.runtime.reader_process import ReaderProcess
        from sluice.source.offset import BinlogOffset

        def forever(start, sources, by_gtid, before_waiting):
            while True:
                time.sleep(0.05)
                yield Heartbeat(start)

        reader = ReaderProcess(forever)
        reader.start(BinlogOffset("mysql-bin.000001", 4), {}, False)
        print(reader._process.pid, flush=True)
        while True:
            reader.get(timeout=1)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the reader process outlived its SIGKILLed parent"


def _alive(pid: int) -> bool:
    """Running, not a zombie (a reaped or orphaned-and-reaped child is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
