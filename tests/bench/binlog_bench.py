"""`make bench` (binlog part): Sluice's binlog reader against a bare python-mysql-replication
loop and `mariadb-binlog` over the same row events, in the same run; the reader (into a
null sink and into PostgreSQL) against the bare loop over single-row transactions; then
end-to-end latency into PostgreSQL with the source written at a steady rate.

Usage: python -m tests.bench.binlog_bench [--events N] [--transactions N] [--rate ROWS_PER_S].
A benchmark, not a test: it prints rates and ratios and asserts nothing. Readers that leave
nothing behind (the bare loop, mariadb-binlog, Sluice into a null sink) are each the better
of two runs; the run into PostgreSQL writes its target once.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import threading
import time

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from sluice.binlog.binlog_split import BinlogSplit
from sluice.event.row_change import ChangeBatch
from sluice.pipeline.definition import build_definition
from sluice.pipeline.sink_configs import JdbcSinkConfig
from sluice.runtime.binlog_streaming import BinlogRun, BinlogSettings, run_binlog_phase
from sluice.runtime.pipeline_metrics import PipelineMetrics
from sluice.sink.base import SinkWriter
from sluice.sink.jdbc.sink import JdbcSink
from sluice.source.connection import current_offset
from sluice.source.endpoint import SourceEndpoint
from sluice.source.offset import BinlogOffset
from sluice.source.schema import read_table_schema
from sluice.state.compact_state import compact
from sluice.state.pipeline_state import PipelineState
from sluice.verify.online import PACE
from sluice.verify.verifier import Verifier
from tests.bench.scraper import INTERVAL, Scraper

TABLE_DDL = (
    "CREATE TABLE bench.events (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL, "
    "amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME(6) NOT NULL, note VARCHAR(100))"
)


class NullWriter(SinkWriter):
    """Discards every batch: what is left is the reader's own cost."""

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        pass

    def apply_schema_change(self, change_id, evolution) -> None:  # noqa: ANN001 - the bench has no DDL
        pass


class LatencyWriter(SinkWriter):
    """Commits through another writer and records, per row, commit time minus write time."""

    def __init__(self, inner: SinkWriter, created_column: int) -> None:
        self.inner = inner
        self.created = created_column
        self.latencies: list[float] = []

    def write_changes(self, batch: ChangeBatch, end: BinlogOffset, drop_split_records: bool) -> None:
        self.inner.write_changes(batch, end, drop_split_records)
        now = time.time()
        self.latencies.extend(now - change.row[self.created].timestamp() for change in batch)

    def apply_schema_change(self, change_id, evolution) -> None:  # noqa: ANN001
        self.inner.apply_schema_change(change_id, evolution)

    def close(self) -> None:
        self.inner.close()


def write_events(mariadb, events: int) -> tuple[BinlogOffset, BinlogOffset]:
    """`events` row events: inserts in transactions of 100 rows, then updates of half of them."""
    conn = mariadb.connect("bench")
    start = current_offset(conn)
    inserts = events * 2 // 3
    mariadb.execute(
        "SET SESSION max_recursive_iterations = 100000000",
        f"INSERT INTO bench.events WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s "
        f"WHERE n < {inserts}) SELECT n, CONCAT('customer-', n % 9973), (n % 100000) / 100, n % 50, "
        "NOW(6), IF(n % 3 = 0, NULL, CONCAT('note ', n)) FROM s",
        f"UPDATE bench.events SET qty = qty + 1 WHERE id <= {events - inserts}",
    )
    end = current_offset(conn)
    conn.close()
    return start, end


def compressed_binlog(mariadb, endpoint, schemas, events: int) -> tuple[float, float]:
    """The sluice reader's and mariadb-binlog's seconds over `events` row events written with
    the binlog compressed (every event: log_bin_compress_min_len 10), best of two each."""
    mariadb.execute("TRUNCATE TABLE bench.events")
    with mariadb.global_setting("log_bin_compress", "ON"), mariadb.global_setting("log_bin_compress_min_len", 10):
        start, end = write_events(mariadb, events)
    reader = min(sluice_reader(endpoint, schemas, NullWriter(), start, end) for _ in range(2))
    return reader, min(mariadb_binlog(mariadb, start, end) for _ in range(2))


def write_single_row_transactions(mariadb, count: int, first_id: int) -> tuple[BinlogOffset, BinlogOffset]:
    """`count` autocommitted one-row inserts: an OLTP source, where per-transaction costs
    (GTID, table map, XID events) outweigh the rows."""
    conn = mariadb.connect("bench")
    start = current_offset(conn)
    with conn.cursor() as cur:
        for i in range(first_id, first_id + count):
            cur.execute("INSERT INTO events VALUES (%s, 'c', 1.00, 1, NOW(6), NULL)", (i,))
    end = current_offset(conn)
    conn.close()
    return start, end


def bare_loop(endpoint: SourceEndpoint, start: BinlogOffset, end: BinlogOffset) -> tuple[int, float]:
    """The baseline: python-mysql-replication's own iteration, rows decoded, nothing else."""
    started = time.perf_counter()
    stream = BinLogStreamReader(
        connection_settings=endpoint.settings(),
        server_id=7901,
        log_file=start.file,
        log_pos=start.pos,
        resume_stream=True,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
    )
    rows = 0
    for event in stream:
        rows += len(event.rows)
        if event.packet.log_pos >= end.pos:
            break
    stream.close()
    return rows, time.perf_counter() - started


def mariadb_binlog(mariadb, start: BinlogOffset, end: BinlogOffset) -> float:
    """`mariadb-binlog -v` over the same range from the server: decodes rows into pseudo-SQL."""
    started = time.perf_counter()
    subprocess.run(
        [
            "mariadb-binlog",
            "--read-from-remote-server",
            f"--host={mariadb.host}",
            f"--port={mariadb.port}",
            f"--user={mariadb.user}",
            f"--start-position={start.pos}",
            f"--stop-position={end.pos}",
            "-v",
            start.file,
        ],
        env=dict(os.environ, MYSQL_PWD=mariadb.password),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started


def sluice_reader(endpoint, schemas, writer: SinkWriter, start, end, metrics: bool = False) -> float:
    """Seconds the binlog phase takes from start to end; `metrics`: counted, served and
    scraped every Scraper.INTERVAL, as `sluice run --metrics-port` does."""
    counted = PipelineMetrics("binlog-bench")
    scraping = Scraper(counted.serve(0)) if metrics else contextlib.nullcontext()
    started = time.perf_counter()
    with scraping:
        run_binlog_phase(
            BinlogRun(
                endpoint,
                BinlogSettings(server_id=7902, heartbeat_seconds=1.0),
                BinlogSplit(start),
                schemas,
                writer,
                threading.Event(),
                lambda *_: None,
                counted.binlog_committed if metrics else lambda *_: None,
                stop_at=end,
            )
        )
    return time.perf_counter() - started


class VerifyingLoop:
    """`sluice verify` of the events table over and over, beside the streaming reader: what
    verification costs the pipeline (and, under load, that it finds nothing)."""

    def __init__(self, mariadb, postgresql, schema, sink: JdbcSink) -> None:
        source = {
            "type": "mysql",
            "hostname": mariadb.host,
            "port": mariadb.port,
            "username": mariadb.user,
            "password": mariadb.password,
            "tables": schema.table_id,
            "server-id": "7910-7911",
            "scan.incremental.snapshot.chunk.size": 8096,
        }
        target = {"type": "jdbc", "url": postgresql.url, "username": postgresql.user, "password": postgresql.password}
        definition = build_definition({"source": source, "sink": target, "pipeline": {"name": "binlog-bench"}}, {})
        state = PipelineState(
            "binlog-bench", {}, tables={schema.table_id: schema}, binlog=BinlogSplit(BinlogOffset("", 4))
        )
        sink.record_state(1, compact(state.to_json()))  # what a pipeline keeps in its target
        self.verifier = Verifier(definition, sink, mariadb.endpoint(), out=io.StringIO())
        self.table = schema.table_id
        self.done = threading.Event()
        self.passes = self.ranges = self.mismatches = 0
        self.examples: list[str] = []  # the mismatches it reported: the target is exact, so each is the verifier's
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.done.is_set():
            result = self.verifier.verify([self.table], pace=PACE)  # as the Kubernetes driver runs it
            self.passes += 1
            self.ranges += result.checked
            self.mismatches += len(result.mismatches)
            self.examples += [mismatch.describe() for mismatch in result.mismatches]

    def __enter__(self) -> VerifyingLoop:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()


def latency(mariadb, endpoint, schemas, sink: JdbcSink, rate: int, seconds: float) -> list[float]:
    """Writes `rate` rows/s in transactions of 10 while the reader streams into PostgreSQL."""
    conn = mariadb.connect("bench")
    with conn.cursor() as cur:
        cur.execute("SELECT MAX(id) FROM events")
        (next_id,) = cur.fetchone()
    start = current_offset(conn)
    writer = LatencyWriter(sink.writer(), created_column=4)
    stopping = threading.Event()
    reader = threading.Thread(
        target=run_binlog_phase,
        args=(
            BinlogRun(
                endpoint,
                BinlogSettings(server_id=7903, heartbeat_seconds=1.0),
                BinlogSplit(start),
                schemas,
                writer,
                stopping,
                lambda *_: None,
                lambda *_: None,
            ),
        ),
    )
    reader.start()
    began = time.monotonic()
    written = 0
    with conn.cursor() as cur:
        while (elapsed := time.monotonic() - began) < seconds:
            if written / rate > elapsed:
                time.sleep(written / rate - elapsed)
            values = ", ".join(f"({next_id + written + i + 1}, 'c', 1.00, 1, NOW(6), NULL)" for i in range(10))
            cur.execute(f"INSERT INTO events VALUES {values}")
            written += 10
    time.sleep(2)
    stopping.set()
    reader.join()
    writer.close()
    conn.close()
    return writer.latencies


def main() -> None:
    from tests.bench.servers import add_servers_option, announce
    from tests.harness.services import running_services, scratch_directory

    parser = argparse.ArgumentParser()
    add_servers_option(parser)
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--transactions", type=int, default=30_000)
    parser.add_argument("--rate", type=int, default=2_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    base = scratch_directory("sluice-binlog-bench-", removed_at_exit=True)
    with running_services(base, args.servers) as (mariadb, postgresql):
        announce(args.servers, mariadb, postgresql)
        mariadb.execute("CREATE DATABASE bench", TABLE_DDL)
        endpoint = mariadb.endpoint()
        conn = mariadb.connect("bench")
        schema = read_table_schema(conn, "bench", "events", None)
        conn.close()
        schemas = {schema.table_id: schema}
        print(f"writing {args.events:,} row events ...", flush=True)
        start, end = write_events(mariadb, args.events)
        rows, bare_seconds = min((bare_loop(endpoint, start, end) for _ in range(2)), key=lambda run: run[1])
        tool_seconds = min(mariadb_binlog(mariadb, start, end) for _ in range(2))
        null_seconds = min(sluice_reader(endpoint, schemas, NullWriter(), start, end) for _ in range(2))
        sink = JdbcSink(
            JdbcSinkConfig.from_options(
                {
                    "url": postgresql.url,
                    "username": postgresql.user,
                    "password": postgresql.password,
                    "sink.batch-size": 5000,
                }
            ),
            "binlog-bench",
        )
        sink.prepare([schema])
        writer = sink.writer()
        pg_seconds = sluice_reader(endpoint, schemas, writer, start, end)
        writer.close()
        bare = rows / bare_seconds
        print(f"bare python-mysql-replication loop: {bare:>10,.0f} row events/s  ({rows:,} events)")
        for label, seconds in (
            ("mariadb-binlog -v (C)", tool_seconds),
            ("sluice reader, null sink", null_seconds),
            ("sluice reader, into PostgreSQL", pg_seconds),
        ):
            rate = rows / seconds
            print(f"{label + ':':35s} {rate:>10,.0f} row events/s  ({rate / bare:.2f}x the bare loop)")
        plain = (rows, null_seconds, tool_seconds)
        print(f"writing {args.transactions:,} single-row transactions ...", flush=True)
        start, end = write_single_row_transactions(mariadb, args.transactions, first_id=args.events * 10)
        rows, bare_seconds = min((bare_loop(endpoint, start, end) for _ in range(2)), key=lambda run: run[1])
        null_seconds = min(sluice_reader(endpoint, schemas, NullWriter(), start, end) for _ in range(2))
        metered_seconds = min(
            sluice_reader(endpoint, schemas, NullWriter(), start, end, metrics=True) for _ in range(2)
        )
        writer = sink.writer()
        pg_seconds = sluice_reader(endpoint, schemas, writer, start, end)
        writer.close()
        print(
            f"single-row transactions: bare loop {rows / bare_seconds:,.0f}/s; sluice reader into a null sink "
            f"{rows / null_seconds:,.0f}/s ({bare_seconds / null_seconds:.2f}x the bare loop), into PostgreSQL "
            f"{rows / pg_seconds:,.0f}/s ({bare_seconds / pg_seconds:.2f}x)"
        )
        print(
            f"single-row transactions, metrics counted, served and scraped every {INTERVAL} s / not: "
            f"{null_seconds / metered_seconds:.2f}x ({rows / metered_seconds:,.0f}/s into a null sink)"
        )
        lat = sorted(latency(mariadb, endpoint, schemas, sink, args.rate, args.seconds))
        p50 = statistics.median(lat)
        p99 = lat[int(len(lat) * 0.99) - 1]
        print(
            f"latency at {args.rate:,} rows/s into PostgreSQL ({len(lat):,} rows): p50 {p50 * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.0f} ms"
        )
        started = time.monotonic()
        with VerifyingLoop(mariadb, postgresql, schema, sink) as verifying:
            checked = sorted(latency(mariadb, endpoint, schemas, sink, args.rate, args.seconds))
        verify_seconds = time.monotonic() - started
        p50v, p99v = statistics.median(checked), checked[int(len(checked) * 0.99) - 1]
        print(
            f"  with verification running beside it ({verifying.passes} passes, {verifying.ranges:,} ranges, "
            f"{verifying.ranges / verify_seconds:.1f} ranges/s, {verifying.mismatches} false mismatches): "
            f"p50 {p50v * 1000:.0f} ms ({p50v / p50:.2f}x), p99 {p99v * 1000:.0f} ms ({p99v / p99:.2f}x)"
        )
        for example in verifying.examples[:3]:
            print(f"    false mismatch: {example}")
        # Last: it writes the table again, which the target above no longer follows.
        rows, null_seconds, tool_seconds = plain
        compressed_null, compressed_tool = compressed_binlog(mariadb, endpoint, schemas, args.events)
        print(
            f"the first row events again, with log_bin_compress=ON: sluice reader, null sink "
            f"{rows / compressed_null:,.0f} row events/s ({null_seconds / compressed_null:.2f}x the plain binlog's; "
            f"mariadb-binlog -v {rows / compressed_tool:,.0f}/s, {tool_seconds / compressed_tool:.2f}x its plain; the "
            "bare loop reads no compressed event)"
        )


if __name__ == "__main__":
    main()
