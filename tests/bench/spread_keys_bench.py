"""`make bench` (spread keys part): a table kept in every target and updated all over its key
space, as an analytics team's would be. Streaming pipelines into Iceberg, Delta Lake, a
MariaDB (the MySQL dialect) and PostgreSQL are stopped; the source takes about 200,000 row
changes (UPDATE transactions of 1,000 keys drawn uniformly from the table, INSERT batches,
DELETEs of spread keys); each `sluice run` starts again and catches up, start included. At
two table sizes (200,000 and 2,000,000 rows): a commit's cost must follow its changes, not
the table.

Each rate is set against `mariadb-binlog -v` decoding the same range in the same run. For
the lake tables: the bytes the catch-up wrote per changed row, the write amplification (those
bytes against the changed rows' share of the table's data bytes before), the files and deletes
after the run, the time a full scan takes with the format's own reader before and after
maintenance's compaction, and what the compaction wrote.

Usage: python -m tests.bench.spread_keys_bench [--servers default|tuned] [--sizes 200000,2000000]
[--changes N] [--targets Iceberg,Delta,MariaDB,PostgreSQL] [--profile DIR]. A benchmark, not a test: it
prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from sluice.pipeline.definition import parse_definition
from sluice.sink.factory import create_sink
from sluice.sink.lakehouse.sink import LakehouseSink
from sluice.source.connection import current_offset
from sluice.source.offset import BinlogOffset
from sluice.source.schema import read_table_schema
from tests.bench.binlog_bench import mariadb_binlog
from tests.bench.catchup_bench import catch_up, stopped_streaming
from tests.bench.cpu_use import servers
from tests.harness.lakehouse import delta_sink, iceberg_sink, lakehouse_table, table_files
from tests.harness.pipelines import (
    mysql_sink,
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    write_pipeline,
)

TABLE = "bench.spread"
TRANSACTION = 1_000  # keys an UPDATE transaction changes


def fill(mariadb, rows: int) -> None:
    mariadb.execute(
        f"DROP TABLE IF EXISTS {TABLE}",
        f"CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL, amount DECIMAL(12,2) NOT NULL, "
        "qty INT NOT NULL, updated DATETIME(6) NOT NULL, note VARCHAR(100))",
        f"INSERT INTO {TABLE} SELECT seq, CONCAT('customer-', seq % 9973), seq / 100, seq % 50, NOW(6), "
        f"IF(seq % 3 = 0, NULL, CONCAT('note ', seq)) FROM seq_1_to_{rows}",
        database="bench",
    )


def write_spread_changes(mariadb, rows: int, changes: int, seed: int) -> tuple[BinlogOffset, BinlogOffset, int]:
    """About `changes` row changes: 85% UPDATEs of TRANSACTION keys drawn uniformly from the
    table a transaction, 10% INSERT batches past its end, 5% DELETEs of spread keys."""
    draw = random.Random(seed)
    conn = mariadb.connect("bench")
    start = current_offset(conn)
    written, next_id = 0, rows + 1
    with conn.cursor() as cur:
        while written < changes:
            for kind in ("update",) * 17 + ("insert",) * 2 + ("delete",):
                if kind == "update":
                    keys = ",".join(str(k) for k in draw.sample(range(1, rows + 1), TRANSACTION))
                    cur.execute(f"UPDATE {TABLE} SET amount = amount + 1, updated = NOW(6) WHERE id IN ({keys})")
                elif kind == "insert":
                    cur.execute(
                        f"INSERT INTO {TABLE} SELECT seq, CONCAT('new-', seq), seq / 100, 1, NOW(6), NULL "
                        f"FROM seq_{next_id}_to_{next_id + TRANSACTION - 1}"
                    )
                    next_id += TRANSACTION
                else:
                    keys = ",".join(str(k) for k in draw.sample(range(1, rows + 1), TRANSACTION))
                    cur.execute(f"DELETE FROM {TABLE} WHERE id IN ({keys})")
                written += cur.rowcount
    end = current_offset(conn)
    conn.close()
    return start, end, written


def directory_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def lake_sink(definition: Path, env: dict[str, str]) -> LakehouseSink:
    sink = create_sink(parse_definition(definition.read_text(), env=env))
    assert isinstance(sink, LakehouseSink)
    return sink


def scan_seconds(sink_options: dict) -> float:
    started = time.perf_counter()
    lakehouse_table(sink_options, TABLE)
    return time.perf_counter() - started


def lake_figures(name: str, lake: Path, options: dict, definition: Path, env: dict, before: dict, changed: int) -> None:
    """What the catch-up left in a lake table, and what compaction makes of it."""
    sink = lake_sink(definition, env)
    sink.prepare([before["schema"]])  # a run of its own, for the maintenance commit
    written = directory_bytes(lake) - before["bytes"]
    per_row_before = before["data_bytes"] / before["rows"]
    files = table_files(sink, TABLE)
    commits = len([r for r in sink.tables.records(TABLE) if "sluice.end" in r]) - before["commits"]
    print(
        f"    {name}: {written / changed:,.0f} bytes written per changed row, write amplification "
        f"{written / (changed * per_row_before):.1f}x; {commits} commits, {written / max(commits, 1) / 1e6:.2f} MB "
        f"each; after: {len(files.data)} data files, {len(files.delete_files)} delete files, "
        f"{files.deleted_rows:,} deleted rows of {files.rows:,}"
    )
    scan_before = min(scan_seconds(options) for _ in range(2))
    end = sink.table_end(TABLE)
    on_disk = directory_bytes(lake)
    started = time.perf_counter()
    done = sink.maintain(sink.schemas[TABLE], end)
    compaction = time.perf_counter() - started
    after = table_files(sink, TABLE)
    scan_after = min(scan_seconds(options) for _ in range(2))
    print(
        f"    {name} compaction: {done.compacted} files rewritten in {compaction:.1f} s "
        f"({max(directory_bytes(lake) - on_disk, 0) / 1e6:.1f} MB net on disk), {len(after.data)} data files and "
        f"{len(after.delete_files)} delete files after; a full scan {scan_before:.2f} s before, "
        f"{scan_after:.2f} s after"
    )


def one_size(
    base: Path, mariadb, postgresql, target, rows: int, changes: int, names: list[str], profile: Path | None = None
) -> None:
    fill(mariadb, rows)
    conn = mariadb.connect("bench")
    schema = read_table_schema(conn, "bench", "spread", None)
    conn.close()
    env = sluice_env(mariadb, postgresql, target)
    lakes = {"Iceberg": base / f"iceberg-{rows}", "Delta": base / f"delta-{rows}"}
    sinks = {
        "Iceberg": iceberg_sink(lakes["Iceberg"]),
        "Delta": delta_sink(lakes["Delta"]),
        "MariaDB": mysql_sink(target),
        "PostgreSQL": postgres_sink(postgresql),
    }
    # Maintenance only when the figures ask for it: the catch-up's own cost is the commits'.
    quiet = {"sink.maintenance.interval": "0", "sink.maintenance.retention": "0s"}
    pipelines, before = {}, {}
    for i, name in enumerate(names):
        sink = {**sinks[name], **(quiet if name in lakes else {})}
        definition = pipeline_yaml(mariadb, TABLE, sink, name=f"spread-{name.lower()}-{rows}")
        definition["source"]["server-id"] = f"{8100 + 4 * i}-{8103 + 4 * i}"
        pipeline = write_pipeline(base / f"spread-{name.lower()}-{rows}.yaml", definition)
        pipelines[name] = stopped_streaming(pipeline, base / f"state-{name.lower()}-{rows}", env, 1800)
        if name in lakes:
            made = lake_sink(pipeline, env)
            files = table_files(made, TABLE)
            before[name] = {
                "schema": schema,
                "bytes": directory_bytes(lakes[name]),
                "data_bytes": sum(files.sizes[p] for p in files.data),
                "rows": files.rows - files.deleted_rows,
                "commits": len([r for r in made.tables.records(TABLE) if "sluice.end" in r]),
            }
    print(f"{rows:,} rows: pipelines stopped; writing about {changes:,} spread row changes ...", flush=True)
    start, end, written = write_spread_changes(mariadb, rows, changes, seed=rows)
    tool_seconds = mariadb_binlog(mariadb, start, end)
    tool = written / tool_seconds
    print(f"  catch-up over {written:,} row changes into a table of {rows:,} rows, start included:")
    print(f"  mariadb-binlog -v (C): {tool:>10,.0f} rows/s")
    pids = servers(mariadb, postgresql, target)
    for name, (pipeline, state) in pipelines.items():
        sampled = profile / f"spread-{name.lower()}-{rows}.raw" if profile else None
        seconds, peak, cpu = catch_up(pipeline, state, env, end, pids, sampled)
        rate = written / seconds
        print(
            f"  sluice run into {name + ':':<12}{rate:>10,.0f} rows/s ({rate / tool:.3f}x mariadb-binlog, "
            f"peak RSS {peak:,.0f} MB)"
        )
        print(f"    {cpu}")
        if name in lakes:
            lake_figures(name, lakes[name], sinks[name], pipeline, env, before[name], written)


def main() -> None:
    from tests.bench.servers import add_servers_option, announce
    from tests.harness.services import running_services, scratch_directory, start_mariadb

    parser = argparse.ArgumentParser()
    add_servers_option(parser)
    parser.add_argument("--sizes", default="200000,2000000", help="table sizes, rows")
    parser.add_argument("--changes", type=int, default=200_000)
    parser.add_argument("--targets", default="Iceberg,Delta,MariaDB,PostgreSQL")
    parser.add_argument("--profile", type=Path, help="a directory for py-spy's samples of each catch-up (slows it)")
    args = parser.parse_args()
    base = scratch_directory("sluice-spread-bench-", removed_at_exit=True)
    with running_services(base, args.servers) as (mariadb, postgresql):
        announce(args.servers, mariadb, postgresql)
        target = start_mariadb(base / "mysql-target", server_id=2, settings=args.servers)
        try:
            mariadb.execute("CREATE DATABASE IF NOT EXISTS bench")
            for rows in (int(size) for size in args.sizes.split(",")):
                one_size(base, mariadb, postgresql, target, rows, args.changes, args.targets.split(","), args.profile)
        finally:
            target.stop()
    print(json.dumps({"scratch": str(base)}))


if __name__ == "__main__":
    main()
