"""`make bench` (memory part): peak RSS on big inputs, each measured in a process of its own.

- A single UPDATE transaction of 2,000,000 rows read by the binlog phase into PostgreSQL,
  against the same reader over a 200,000-row transaction: bounded memory means the two
  peaks are about equal.
- A 100,000-split snapshot plan through the state directory: planned and saved, every split
  recorded as finished (the journal), reloaded, and handed to the binlog split.

Usage: python -m tests.bench.memory_bench [--rows N] [--splits N].
A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux: KiB


def child(args: list[str]) -> dict:
    """Runs `python -m tests.bench.memory_bench --child ...` and returns what it printed."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.bench.memory_bench", "--child", *args], capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def read_transaction(port: int, password: str, pg_url: str, pg_password: str, start: str, end: str) -> dict:
    """Child: the binlog phase from `start` to `end` into PostgreSQL; its peak RSS, and its
    binlog reader process's (a fork: the pages they share count in both)."""
    from sluice.binlog.binlog_split import BinlogSplit
    from sluice.pipeline.sink_configs import JdbcSinkConfig
    from sluice.runtime.binlog_streaming import BinlogRun, BinlogSettings, run_binlog_phase
    from sluice.sink.jdbc.sink import JdbcSink
    from sluice.source.connection import connect
    from sluice.source.endpoint import SourceEndpoint
    from sluice.source.offset import BinlogOffset
    from sluice.source.schema import read_table_schema

    endpoint = SourceEndpoint("127.0.0.1", port, "root", password)
    conn = connect(endpoint)
    schema = read_table_schema(conn, "bench", "wide", None)
    conn.close()
    sink = JdbcSink(
        JdbcSinkConfig.from_options(
            {"url": pg_url, "username": "sluice", "password": pg_password, "sink.batch-size": 5000}
        ),
        "memory-bench",
    )
    sink.prepare([schema])
    writer = sink.writer()
    before = peak_rss_mb()
    started = time.perf_counter()
    run_binlog_phase(
        BinlogRun(
            endpoint,
            BinlogSettings(server_id=7950, heartbeat_seconds=1.0),
            BinlogSplit(BinlogOffset.from_json(json.loads(start))),
            {schema.table_id: schema},
            writer,
            threading.Event(),
            lambda *_: None,
            lambda *_: None,
            stop_at=BinlogOffset.from_json(json.loads(end)),
        )
    )
    writer.close()
    return {
        "seconds": time.perf_counter() - started,
        "before": before,
        "peak": peak_rss_mb(),
        "reader": peak_rss_mb(resource.RUSAGE_CHILDREN),
    }


def split_plan(splits: int) -> dict:
    """Child: a plan of `splits` splits through the state store, as the local runner keeps it."""
    from sluice.event.snapshot_split import SnapshotSplit
    from sluice.snapshot.snapshot_split_assigner import SnapshotAssignerState
    from sluice.source.offset import BinlogOffset
    from sluice.source.schema import Column, TableSchema
    from sluice.state.pipeline_state import PipelineState
    from sluice.state.state_store import DirectoryStateStore

    before = peak_rss_mb()
    started = time.perf_counter()
    schema = TableSchema("bench", "t", (Column("id", "bigint", "bigint", False),), ("id",), "id")
    edges = [None, *range(1000, 1000 * splits, 1000), None]
    plan = SnapshotAssignerState.plan(
        [schema], [SnapshotSplit("bench.t", i, edges[i], edges[i + 1]) for i in range(splits)]
    )
    with tempfile.TemporaryDirectory() as directory:
        store = DirectoryStateStore(directory)
        state = PipelineState("bench", {}, tables={schema.table_id: schema}, snapshot=plan)
        store.save(state)
        for i, split in enumerate(plan.splits):
            plan.record(split.split_id, BinlogOffset("mysql-bin.000001", 4 + i), 1000)
            store.record_split_finished(split.split_id, plan.finished[split.split_id])
        written = sum(p.stat().st_size for p in Path(directory).iterdir())
        loaded = store.load()
        assert loaded is not None and loaded.snapshot is not None
        loaded.binlog = loaded.snapshot.binlog_split()
        store.save(loaded)
        final = (Path(directory) / "state.json").stat().st_size
    return {
        "seconds": time.perf_counter() - started,
        "before": before,
        "peak": peak_rss_mb(),
        "journal_and_plan_bytes": written,
        "state_bytes": final,
    }


def main() -> None:
    from tests.bench.servers import add_servers_option

    parser = argparse.ArgumentParser()
    add_servers_option(parser)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--splits", type=int, default=100_000)
    parser.add_argument("--child", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        result = read_transaction(int(rest[0]), *rest[1:]) if kind == "transaction" else split_plan(int(rest[0]))
        print(json.dumps(result))
        return

    from sluice.source.connection import current_offset
    from tests.bench.servers import announce
    from tests.harness.services import running_services, scratch_directory

    plan = child(["plan", str(args.splits)])
    print(
        f"{args.splits:,}-split plan through the state directory: peak RSS {plan['peak']:,.0f} MB "
        f"({plan['before']:,.0f} MB after imports), {plan['journal_and_plan_bytes'] / 1e6:,.1f} MB written for "
        f"the plan and every finished split, {plan['state_bytes'] / 1e6:,.1f} MB of state after the switch, "
        f"{plan['seconds']:.1f} s"
    )
    base = scratch_directory("sluice-memory-bench-", removed_at_exit=True)
    with running_services(base, args.servers) as (mariadb, postgresql):
        announce(args.servers, mariadb, postgresql)
        mariadb.execute(
            "CREATE DATABASE bench",
            "CREATE TABLE bench.wide (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL, "
            "amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME(6) NOT NULL, note VARCHAR(100))",
            f"INSERT INTO bench.wide SELECT seq, CONCAT('customer-', seq), seq / 100, 1, NOW(6), 'note' "
            f"FROM bench.seq_1_to_{args.rows}",
        )
        results = {}
        for rows in (args.rows // 10, args.rows):
            conn = mariadb.connect("bench")
            start = current_offset(conn)
            with conn.cursor() as cur:
                cur.execute(f"UPDATE wide SET qty = qty + 1 WHERE id <= {rows}")  # one transaction
            end = current_offset(conn)
            conn.close()
            results[rows] = child(
                [
                    "transaction",
                    str(mariadb.port),
                    mariadb.password,
                    postgresql.url,
                    postgresql.password,
                    json.dumps(start.to_json()),
                    json.dumps(end.to_json()),
                ]
            )
        small, big = results[args.rows // 10], results[args.rows]
        print(
            f"one UPDATE of {args.rows:,} rows, binlog phase into PostgreSQL: peak RSS {big['peak']:,.0f} MB "
            f"({big['before']:,.0f} MB before reading; its binlog reader process {big['reader']:,.0f} MB), "
            f"{args.rows / big['seconds']:,.0f} rows/s; "
            f"of {args.rows // 10:,} rows: {small['peak']:,.0f} MB "
            f"({big['peak'] / small['peak']:.2f}x for 10x the rows)"
        )


if __name__ == "__main__":
    main()
