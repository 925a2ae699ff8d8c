"""`make bench`: Sluice's snapshot against a plain single-thread pymysql scan, same run, same table.

Usage: python -m tests.bench.snapshot_bench [--rows N]. A benchmark, not a test: it prints
rates and their ratio and asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import time

import pymysql.cursors

from tests.harness.pipelines import pipeline_yaml, postgres_sink, run_sluice, sluice_env, write_pipeline
from tests.harness.services import running_services, scratch_directory

TABLE_DDL = (
    "CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL, "
    "amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, created DATETIME NOT NULL, note VARCHAR(100))"
)


def fill(mariadb, rows: int) -> None:
    mariadb.execute(
        "SET SESSION max_recursive_iterations = 100000000",
        "CREATE DATABASE bench",
        TABLE_DDL,
        "INSERT INTO bench.orders WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s "
        f"WHERE n < {rows}) SELECT n, CONCAT('customer-', n % 9973), (n % 100000) / 100, n % 50, "
        "'2024-01-01' + INTERVAL (n % 1000000) SECOND, IF(n % 3 = 0, NULL, CONCAT('note ', n)) FROM s",
    )


def plain_scan(mariadb) -> tuple[int, float]:
    """The baseline: one pymysql streaming cursor reading every row."""
    conn = mariadb.connect("bench", cursorclass=pymysql.cursors.SSCursor)
    started = time.perf_counter()
    count = 0
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM orders")
        while batch := cur.fetchmany(1024):
            count += len(batch)
    elapsed = time.perf_counter() - started
    conn.close()
    return count, elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=8096)
    args = parser.parse_args()
    base = scratch_directory("sluice-bench-")
    with running_services(base) as (mariadb, postgresql):
        print(f"filling bench.orders with {args.rows:,} rows ...", flush=True)
        fill(mariadb, args.rows)
        count, scan_seconds = plain_scan(mariadb)
        scan_rate = count / scan_seconds
        definition = pipeline_yaml(
            mariadb,
            "bench.orders",
            postgres_sink(postgresql),
            name="bench",
            parallelism=args.parallelism,
            **{"scan.startup.mode": "snapshot", "scan.incremental.snapshot.chunk.size": args.chunk_size},
        )
        pipeline = write_pipeline(base / "bench.yaml", definition)
        started = time.perf_counter()
        result = run_sluice(pipeline, base / "state", sluice_env(mariadb, postgresql), timeout=3600)
        total_seconds = time.perf_counter() - started
        if result.returncode != 0:
            raise SystemExit(f"sluice failed:\n{result.stderr}")
        with postgresql.connect() as conn:
            copied = conn.execute("SELECT count(*) FROM bench.orders").fetchone()[0]
        phase_rate = float(re.findall(r"([\d,]+) rows/s", result.stderr)[-1].replace(",", ""))
        end_to_end = copied / total_seconds
        print(
            f"plain pymysql scan (1 thread):         {scan_rate:>10,.0f} rows/s  ({count:,} rows, {scan_seconds:.1f}s)"
        )
        print(f"sluice snapshot phase, into PostgreSQL: {phase_rate:>10,.0f} rows/s  (parallelism {args.parallelism})")
        print(
            f"sluice end to end incl. Spark start:   {end_to_end:>10,.0f} rows/s  "
            f"({copied:,} rows, {total_seconds:.1f}s)"
        )
        print(f"ratio snapshot phase / plain scan:     {phase_rate / scan_rate:>10.2f}x")
        print(f"ratio end to end / plain scan:         {end_to_end / scan_rate:>10.2f}x")


if __name__ == "__main__":
    main()
