"""`make bench` (lakehouse part): the Iceberg and Delta Lake sinks, each figure against a
baseline measured in the same run.

- Snapshot: `sluice run` of a table's snapshot into each format, against the table read by
  the `mariadb` client and written once by the format's own library (pyiceberg's append,
  delta-rs's write_deltalake): no CDC, no chunks, no records.
- Binlog: Sluice's reader committing into each format, against the bare
  python-mysql-replication loop over the same row events.
- (Commit cost as the table grows, keys spread over it: tests/bench/spread_keys_bench.py.)
- Files per table after an hour of streaming at a steady rate (one commit each
  `sink.commit.interval` of 5 s: 720 commits of 100 rows), with and without
  sink.maintenance every 10 minutes, through the sink itself on a simulated clock: the files
  the table reads, and those stored (with no retention; a real one keeps the replaced files
  of its window).

Each run prints the CPU split the other parts print. Usage: python -m tests.bench.lakehouse_bench
[--rows N] [--events N] [--commits N]. A benchmark, not a test: it prints figures and
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog import load_catalog

from sluice.event.row_change import ChangeBatch, ChangeRow, RowKind
from sluice.pipeline.definition import build_definition
from sluice.sink.arrow_rows import arrow_schema
from sluice.sink.factory import create_sink
from sluice.sink.lakehouse.sink import LakehouseSink
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column, TableSchema, read_table_schema
from tests.bench.binlog_bench import TABLE_DDL as EVENTS_DDL
from tests.bench.binlog_bench import bare_loop, sluice_reader, write_events
from tests.bench.cpu_use import cpu_summary, read_cpu
from tests.bench.servers import add_servers_option, announce
from tests.bench.snapshot_bench import fill
from tests.harness.lakehouse import delta_sink, iceberg_sink
from tests.harness.pipelines import pipeline_yaml, run_sluice, sluice_env, write_pipeline
from tests.harness.services import running_services, scratch_directory

FORMATS = {"iceberg": iceberg_sink, "delta": delta_sink}


def _sink(sink: dict[str, Any], name: str, **options: Any) -> LakehouseSink:
    source = {"type": "mysql", "hostname": "localhost", "username": "bench", "tables": "bench.orders"}
    definition = build_definition({"source": source, "sink": {**sink, **options}, "pipeline": {"name": name}}, {})
    made = create_sink(definition)
    assert isinstance(made, LakehouseSink)
    return made


def library_baseline(mariadb, schema: TableSchema, target: str, directory: Path) -> float:
    """Seconds to read the table with the mariadb client and write it once with the library."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    started = time.perf_counter()
    text = subprocess.run(
        ["mariadb", "-h", mariadb.host, "-P", str(mariadb.port), "-u", mariadb.user, "--quick", "-B", "-N",
         "-e", f"SELECT * FROM {schema.table_id}"],
        env=dict(os.environ, MYSQL_PWD=mariadb.password),
        capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    arrow = arrow_schema(schema)
    parsed = pacsv.read_csv(
        pa.py_buffer(text),
        read_options=pacsv.ReadOptions(column_names=arrow.names),
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False),
        convert_options=pacsv.ConvertOptions(column_types=arrow, null_values=["NULL"], strings_can_be_null=True),
    ).cast(arrow)
    if target == "iceberg":
        catalog = load_catalog(
            "baseline", type="sql", uri=f"sqlite:///{directory}/c.db", warehouse=f"file://{directory}"
        )
        catalog.create_namespace_if_not_exists("bench")
        catalog.create_table("bench.orders", schema=arrow).append(parsed)
    else:
        write_deltalake(str(directory / "orders"), parsed)
    return time.perf_counter() - started


def snapshot_figures(base: Path, mariadb, rows: int) -> None:
    conn = mariadb.connect("bench")
    schema = read_table_schema(conn, "bench", "orders", None)
    conn.close()
    for target, make in FORMATS.items():
        directory = base / f"baseline-{target}"
        baseline = min(library_baseline(mariadb, schema, target, directory) for _ in range(2))
        lake = base / f"snapshot-{target}"
        shutil.rmtree(lake, ignore_errors=True)
        definition = pipeline_yaml(
            mariadb, "bench.orders", make(lake), name=f"bench-{target}", parallelism=2,
            **{"scan.startup.mode": "snapshot", "scan.incremental.snapshot.chunk.size": 8096},
        )  # fmt: skip
        pipeline = write_pipeline(base / f"snapshot-{target}.yaml", definition)
        shutil.rmtree(base / f"state-{target}", ignore_errors=True)
        before, started = read_cpu({"source MariaDB": mariadb.process.pid}), time.perf_counter()
        result = run_sluice(pipeline, base / f"state-{target}", sluice_env(mariadb), timeout=3600)
        seconds = time.perf_counter() - started
        if result.returncode != 0:
            raise SystemExit(f"sluice failed:\n{result.stderr}")
        cpu = cpu_summary(before, read_cpu({"source MariaDB": mariadb.process.pid}), seconds)
        print(
            f"snapshot into {target}: sluice {rows / seconds:,.0f} rows/s end to end ({seconds:.1f} s), the client and "
            f"the library once {rows / baseline:,.0f} rows/s ({baseline:.1f} s): {baseline / seconds:.2f}x; {cpu}"
        )


def binlog_figures(base: Path, mariadb, events: int) -> None:
    mariadb.execute(EVENTS_DDL)
    conn = mariadb.connect("bench")
    schema = read_table_schema(conn, "bench", "events", None)
    conn.close()
    start, end = write_events(mariadb, events)
    endpoint = mariadb.endpoint()
    rows, bare_seconds = min((bare_loop(endpoint, start, end) for _ in range(2)), key=lambda run: run[1])
    for target, make in FORMATS.items():
        sink = _sink(make(base / f"binlog-{target}"), f"binlog-{target}")
        sink.prepare([schema])
        before = read_cpu({"source MariaDB": mariadb.process.pid})
        seconds = sluice_reader(endpoint, {schema.table_id: schema}, sink.writer(), start, end)
        cpu = cpu_summary(before, read_cpu({"source MariaDB": mariadb.process.pid}), seconds)
        print(
            f"binlog into {target}: {rows / seconds:,.0f} row events/s, the bare loop {rows / bare_seconds:,.0f}/s: "
            f"{bare_seconds / seconds:.2f}x; {cpu}"
        )


def files_after_an_hour(base: Path, commits: int) -> None:
    """`commits` commits of 100 rows (720: an hour at one commit each 5 s), with and without maintenance."""
    schema = TableSchema(
        "bench", "stream", (Column("id", "bigint", "bigint", False), Column("v", "int", "int", True)), ("id",), "id"
    )
    for target, make in FORMATS.items():
        for maintained in (False, True):
            lake = base / f"hour-{target}-{maintained}"
            shutil.rmtree(lake, ignore_errors=True)
            # Retention 0 here: the replaced files of the simulated hour are minutes old in fact.
            options = {"sink.maintenance.interval": "10min" if maintained else "0", "sink.maintenance.retention": "0s"}
            sink = _sink(make(lake), f"hour-{target}", **options)
            sink.prepare([schema])
            writer = sink.writer()
            hour = [0.0]
            writer.clock = lambda hour=hour: hour[0]  # the schedule runs on the hour's clock
            started = time.perf_counter()
            for n in range(commits):
                changes = [
                    ChangeRow(schema, RowKind.INSERT, (n * 100 + i, n), 0, BinlogOffset("b.1", n * 100 + i))
                    for i in range(100)
                ]
                writer.write_changes(ChangeBatch(changes), BinlogOffset("b.1", n * 100 + 100), True)
                hour[0] += 5.0
            files = len(list(lake.rglob("*.parquet")))
            if target == "iceberg":
                read = len(sink.tables.catalog.load_table("bench.stream").inspect.files())
            else:
                read = len(DeltaTable(sink.tables.uri("bench.stream")).get_add_actions())
            said = "with maintenance" if maintained else "without maintenance"
            print(
                f"{target}, {commits} commits of 5 s ({commits * 5 / 3600:.1f} h) {said}: {read} data files read, "
                f"{files} stored ({time.perf_counter() - started:.0f} s to run)"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    add_servers_option(parser)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--commits", type=int, default=720)
    args = parser.parse_args()
    base = scratch_directory("sluice-lakehouse-bench-", removed_at_exit=True)
    with running_services(base, args.servers) as (mariadb, _postgresql):
        announce(args.servers, mariadb)
        fill(mariadb, args.rows)
        snapshot_figures(base, mariadb, args.rows)
        binlog_figures(base, mariadb, args.events)
    files_after_an_hour(base, args.commits)
    print(json.dumps({"scratch": str(base)}))


if __name__ == "__main__":
    main()
