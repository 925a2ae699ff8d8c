"""`make bench` (verify part): `sluice verify` of a big table while its pipeline streams into
PostgreSQL at 2,000 rows/s, at two sizes (1M and 10M rows by default): ranges and rows per
second against a raw read of both sides (the source's SELECT and PostgreSQL's COPY TO), the
peak RSS of verify (flat from the small table to the big one when its memory is bounded),
and the pipeline's latency meanwhile. Then a repair of a 1,000-row difference: the longest
a streamed row waited while it ran, which is how long a range's repair holds the pipeline.

Latency: a row written at the source (its time, NOW(6)) is stamped by a trigger on the target
table as PostgreSQL inserts it (clock_timestamp()); both clocks are this machine's.

Usage: python -m tests.bench.verify_bench [--servers default|tuned] [--rows N] [--small-rows N].
A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path

from tests.harness.pipelines import (
    SLUICE,
    pipeline_yaml,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)

RATE = 2_000  # rows/s the application writes while verify runs
CHUNK = 8_096  # the pipeline's chunk size (Flink CDC's default)
PING_DDL = "CREATE TABLE bench.pings (id BIGINT PRIMARY KEY, written DATETIME(6) NOT NULL)"


class Pings:
    """Inserts RATE rows/s into bench.pings (transactions of 10) until stopped; each row's
    latency is read back from the target's arrival stamps."""

    def __init__(self, mariadb, first_id: int) -> None:
        self.mariadb, self.next_id = mariadb, first_id
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        conn = self.mariadb.connect("bench")
        began, written = time.monotonic(), 0
        with conn.cursor() as cur:
            while not self.done.is_set():
                ahead = written / RATE - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
                values = ", ".join(f"({self.next_id + i}, NOW(6))" for i in range(10))
                cur.execute(f"INSERT INTO pings VALUES {values}")
                self.next_id += 10
                written += 10
        conn.close()

    def __enter__(self) -> Pings:
        self.first = self.next_id
        self.done.clear()
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()

    def latencies_ms(self, mariadb, postgresql) -> list[float]:
        """Milliseconds from each row's write to its arrival, for the rows of the last run."""
        deadline = time.monotonic() + 120
        with postgresql.connect() as conn:
            while conn.execute("SELECT COUNT(*) FROM bench.arrivals WHERE id >= %s", (self.first,)).fetchone()[0] < (
                self.next_id - self.first
            ):
                if time.monotonic() > deadline:
                    raise SystemExit("the pipeline did not deliver every ping")
                time.sleep(0.2)
            arrived = dict(conn.execute("SELECT id, at FROM bench.arrivals WHERE id >= %s", (self.first,)).fetchall())
        conn = mariadb.connect("bench")
        with conn.cursor() as cur:
            cur.execute("SELECT id, written FROM pings WHERE id >= %s", (self.first,))
            written = dict(cur.fetchall())
        conn.close()
        return [(arrived[i].replace(tzinfo=None) - written[i]).total_seconds() * 1000 for i in written]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def raw_read_seconds(mariadb, postgresql, rows: int) -> float:
    """Both sides read whole, as fast as their own clients stream them: the source's SELECT
    (`mariadb --quick` into /dev/null) and PostgreSQL's COPY TO."""
    started = time.perf_counter()
    subprocess.run(
        [
            "mariadb",
            "--quick",
            "--batch",
            f"--host={mariadb.host}",
            f"--port={mariadb.port}",
            f"--user={mariadb.user}",
            f"--password={mariadb.password}",
            "-e",
            "SELECT * FROM bench.orders",
        ],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    with postgresql.connect() as conn, conn.cursor() as cur, cur.copy("COPY bench.orders TO STDOUT") as copy:
        for _ in copy:
            pass
    return time.perf_counter() - started


def run_verify(pipeline: Path, env: dict[str, str], *args: str) -> tuple[float, float, str]:
    """Seconds, peak RSS (MB) and output of one `sluice verify`."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [*SLUICE, "verify", str(pipeline), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = process.stdout.read()  # type: ignore[union-attr]
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    return time.perf_counter() - started, usage.ru_maxrss / 1024, output


def measure(mariadb, postgresql, base: Path, rows: int, name: str) -> dict:
    mariadb.execute(
        "DROP DATABASE IF EXISTS bench",
        "CREATE DATABASE bench",
        "CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL, "
        "amount DECIMAL(12,2) NOT NULL, updated DATETIME(6) NOT NULL)",
        PING_DDL,
    )
    for first in range(1, rows + 1, 1_000_000):
        last = min(rows, first + 999_999)
        mariadb.execute(
            "INSERT INTO bench.orders SELECT seq, CONCAT('customer-', seq % 9973), seq / 100, NOW(6) "
            f"FROM seq_{first}_to_{last}",
            database="bench",
        )
    with postgresql.connect() as conn:
        conn.execute("DROP SCHEMA IF EXISTS bench CASCADE")
    definition = pipeline_yaml(
        mariadb,
        "bench.(orders|pings)",
        postgres_sink(postgresql),
        name=name,
        **{"server-id": "7990-7993", "scan.incremental.snapshot.chunk.size": CHUNK},
    )
    pipeline = write_pipeline(base / f"{name}.yaml", definition)
    env, state = sluice_env(mariadb, postgresql), base / f"state-{name}"
    process = start_sluice(pipeline, state, env)
    pings = Pings(mariadb, 1)
    try:
        wait_until_in_binlog_phase(process, state, time.monotonic() + 3600)
        with postgresql.connect() as conn:
            conn.execute(
                "CREATE TABLE bench.arrivals (id BIGINT PRIMARY KEY, at TIMESTAMPTZ NOT NULL);"
                "CREATE FUNCTION bench.arrived() RETURNS trigger AS $$ BEGIN "
                "INSERT INTO bench.arrivals VALUES (NEW.id, clock_timestamp()) ON CONFLICT DO NOTHING; RETURN NEW; "
                "END $$ LANGUAGE plpgsql;"
                "CREATE TRIGGER arrived AFTER INSERT ON bench.pings FOR EACH ROW EXECUTE FUNCTION bench.arrived()"
            )
        with pings:  # a change past the snapshot's watermarks: the state drops them
            while "snapshot" in read_state(state):
                time.sleep(0.2)
            time.sleep(5)
        quiet = pings.latencies_ms(mariadb, postgresql)
        read_seconds = raw_read_seconds(mariadb, postgresql, rows)

        with pings:
            seconds, peak, output = run_verify(pipeline, env, "--table", "bench.orders")
        during = pings.latencies_ms(mariadb, postgresql)
        checked = re.search(r"(\d+) ranges checked, (\d+) differ", output)
        if checked is None:
            raise SystemExit(f"verify said: {output[-2000:]}")

        middle = rows // 2
        with postgresql.connect() as conn:
            conn.execute("UPDATE bench.orders SET amount = -1 WHERE id BETWEEN %s AND %s", (middle, middle + 999))
        with pings:
            time.sleep(2)
            repair_seconds, _, repaired = run_verify(pipeline, env, "--table", "bench.orders", "--repair")
            time.sleep(2)
        repair = pings.latencies_ms(mariadb, postgresql)
        if " 0 differ" not in repaired or "repaired" not in repaired:
            raise SystemExit(f"the repair said: {repaired[-2000:]}")
        return {
            "rows": rows,
            "read": read_seconds,
            "verify": seconds,
            "ranges": int(checked[1]),
            "differ": int(checked[2]),
            "peak": peak,
            "quiet": quiet,
            "during": during,
            "repair": repair,
            "repair_seconds": repair_seconds,
            "repaired": len(re.findall(r"^repaired: ", repaired, re.MULTILINE)),
        }
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=120)


def report(figures: dict) -> None:
    rows, seconds = figures["rows"], figures["verify"]
    print(f"verify of {rows:,} rows while the pipeline streams {RATE:,} rows/s into PostgreSQL:", flush=True)
    print(
        f"  raw read of both sides:               {rows / figures['read']:>10,.0f} rows/s "
        "(mariadb --quick SELECT, then COPY TO)"
    )
    print(
        f"  sluice verify:                        {rows / seconds:>10,.0f} rows/s  "
        f"({figures['read'] / seconds:.2f}x the raw read; {figures['ranges']:,} ranges, "
        f"{figures['ranges'] / seconds:,.1f} ranges/s; {figures['differ']} differ)"
    )
    print(f"  peak RSS of verify:                   {figures['peak']:8.0f} MB")
    for label, key in (("before verify", "quiet"), ("during verify", "during"), ("during the repair", "repair")):
        values = figures[key]
        print(
            f"  pipeline latency {label + ':':<20} p50 {percentile(values, 0.5):6.0f} ms, "
            f"p99 {percentile(values, 0.99):6.0f} ms, max {max(values):6.0f} ms ({len(values):,} rows)"
        )
    print(
        f"  repair of a 1,000-row difference:     {figures['repair_seconds']:8.1f} s in all, "
        f"{figures['repaired']} range(s) rewritten; the longest a streamed row waited: "
        f"{max(figures['repair']):,.0f} ms (p50 before verify: {statistics.median(figures['quiet']):,.0f} ms)"
    )


def main() -> None:
    from tests.bench.servers import add_servers_option, announce
    from tests.harness.services import running_services, scratch_directory

    parser = argparse.ArgumentParser()
    add_servers_option(parser)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--small-rows", type=int, default=1_000_000, help="the size verify's memory is set against")
    args = parser.parse_args()
    base = scratch_directory("sluice-verify-bench-", removed_at_exit=True)
    with running_services(base, args.servers) as (mariadb, postgresql):
        announce(args.servers, mariadb, postgresql)
        small = measure(mariadb, postgresql, base, args.small_rows, "verify-bench-small")
        report(small)
        big = measure(mariadb, postgresql, base, args.rows, "verify-bench-big")
        report(big)
        print(
            f"verify's peak RSS: {small['peak']:,.0f} MB at {small['rows']:,} rows, {big['peak']:,.0f} MB at "
            f"{big['rows']:,} rows ({big['peak'] / small['peak']:.2f}x for {big['rows'] / small['rows']:.0f}x the rows)"
        )


if __name__ == "__main__":
    main()
