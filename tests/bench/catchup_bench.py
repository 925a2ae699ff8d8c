"""`make bench` (catch-up part): streaming pipelines into PostgreSQL, a MariaDB (the MySQL
dialect) and Iceberg are stopped, the source takes a mix of row changes (UPDATEs of 1,000
rows a transaction, batches of INSERTs, range DELETEs, single-row UPDATE commits), then each
`sluice run` starts again in turn and catches up, start included. Then the same with
single-row transactions only, into PostgreSQL. Each rate is set against `mariadb-binlog -v`
decoding the same range and the bare python-mysql-replication loop reading it, in the same
run; with each run its peak RSS (the larger of its driver's and its binlog reader's).

Usage: python -m tests.bench.catchup_bench [--servers default|tuned] [--changes N] [--singles N]
[--targets PostgreSQL,MariaDB,Iceberg] [--profile DIR [--profile-format raw|speedscope]].
With --profile, py-spy samples each catch-up (the driver and its binlog reader, every
thread, waits included) into DIR, one file per run: collapsed stacks, or speedscope's
timeline (which shows when each thread waited for which). The performance page quotes them.
A benchmark, not a test: it prints rates and ratios and asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path

from sluice.source.connection import current_offset
from sluice.source.offset import BinlogOffset
from tests.bench.binlog_bench import bare_loop, mariadb_binlog
from tests.bench.cpu_use import cpu_summary, read_cpu, servers
from tests.harness.kills import caught_up
from tests.harness.lakehouse import iceberg_sink
from tests.harness.pipelines import (
    mysql_sink,
    pipeline_yaml,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)

TABLE_DDL = (
    "CREATE TABLE bench.orders (id BIGINT PRIMARY KEY, customer VARCHAR(40) NOT NULL, "
    "amount DECIMAL(12,2) NOT NULL, qty INT NOT NULL, updated DATETIME(6) NOT NULL, note VARCHAR(100))"
)
ROWS = 200_000  # the table's rows before the pipeline stops
BATCH = 1_000  # rows a multi-row transaction changes


def write_single_row_commits(mariadb, count: int) -> tuple[BinlogOffset, BinlogOffset, int]:
    """`count` autocommitted one-row UPDATEs: an OLTP source, where per-transaction costs
    (GTID, table map, XID events, a commit) outweigh the rows."""
    conn = mariadb.connect("bench")
    with conn.cursor() as cur:
        cur.execute("SELECT id FROM orders ORDER BY id DESC LIMIT 50000")  # rows there (the mix deleted some)
        ids = [row[0] for row in cur.fetchall()]
    start = current_offset(conn)
    with conn.cursor() as cur:
        for i in range(count):
            cur.execute("UPDATE orders SET qty = qty + 1 WHERE id = %s", (ids[i % len(ids)],))
    end = current_offset(conn)
    conn.close()
    return start, end, count


def write_changes(mariadb, changes: int) -> tuple[BinlogOffset, BinlogOffset, int]:
    """About `changes` row changes: 70% UPDATEs of BATCH rows a transaction, 15% INSERT batches,
    10% range DELETEs, 5% single-row UPDATE commits; the range they span and its row count."""
    conn = mariadb.connect("bench")  # autocommit: each statement its own transaction
    start = current_offset(conn)
    written, next_id, low = 0, ROWS + 1, 1
    with conn.cursor() as cur:
        singles = changes // 20
        for i in range(singles):
            cur.execute("UPDATE orders SET qty = qty + 1 WHERE id = %s", (ROWS // 2 + i % (ROWS // 4),))
        written += singles
        while written < changes:
            for kind in ("update",) * 14 + ("insert",) * 3 + ("delete",) * 2:
                if kind == "update":
                    first = BATCH + (written * 7919) % (ROWS - 3 * BATCH)
                    cur.execute(
                        "UPDATE orders SET amount = amount + 1, updated = NOW(6) WHERE id >= %s AND id < %s",
                        (first, first + BATCH),
                    )
                elif kind == "insert":
                    cur.execute(
                        "INSERT INTO orders SELECT seq, CONCAT('new-', seq), seq / 100, 1, NOW(6), NULL "
                        f"FROM seq_{next_id}_to_{next_id + BATCH - 1}"
                    )
                    next_id += BATCH
                else:
                    cur.execute("DELETE FROM orders WHERE id >= %s AND id < %s", (low, low + BATCH))
                    low += BATCH
                written += cur.rowcount
    end = current_offset(conn)
    conn.close()
    return start, end, written


def stopped_streaming(pipeline: Path, state: Path, env: dict[str, str], timeout: float) -> tuple[Path, Path]:
    """The pipeline run until it streams (its snapshot done), then stopped: its definition and state."""
    first = start_sluice(pipeline, state, env)
    wait_until_in_binlog_phase(first, state, time.monotonic() + timeout)
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=300)
    return pipeline, state


def catch_up(
    pipeline: Path,
    state: Path,
    env: dict[str, str],
    end: BinlogOffset,
    servers: dict[str, int],
    profile: Path | None = None,
) -> tuple[float, float, str]:
    """Seconds from `sluice run` starting to its state holding `end`, the largest peak RSS
    (MB) of its processes (the driver, the binlog reader), and where the machine's CPU time
    went meanwhile (`servers`: the root pid of each server); the run is then stopped.
    With `profile`, py-spy samples the run into that file as it goes (it slows the run)."""
    cpu_before = read_cpu(servers)
    started = time.monotonic()
    run = start_sluice(pipeline, state, env)
    sampler = _sample(run.pid, profile) if profile is not None else None
    while not ("binlog" in (now := read_state(state)) and caught_up(now, end)):
        if run.poll() is not None:
            raise SystemExit(f"sluice run ended before catching up: {run.communicate()[1][-2000:]}")
        time.sleep(0.01)  # the end is seen within 10 ms of its commit (50 ms added 25 on average)
    seconds = time.monotonic() - started
    cpu = cpu_summary(cpu_before, read_cpu(servers), seconds)
    peak = max(_peak_rss_mb(pid) for pid in (run.pid, *_children(run.pid)))
    if sampler is not None:
        sampler.send_signal(signal.SIGINT)  # py-spy writes what it sampled
        sampler.communicate(timeout=120)
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=120)
    return seconds, peak, cpu


def _sample(pid: int, into: Path) -> subprocess.Popen:
    into.parent.mkdir(parents=True, exist_ok=True)
    py_spy = Path(sys.executable).with_name("py-spy")
    command = [str(py_spy), "record", "--pid", str(pid), "--subprocesses", "--idle", "--threads"]
    command += ["--format", into.suffix[1:], "--output", str(into)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def _peak_rss_mb(pid: int) -> float:
    """The process's high-water mark of resident memory, as Linux keeps it."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def report(what: str, rows: int, written: int, tool_seconds: float, bare_seconds: float, runs: dict) -> None:
    if not rows:
        raise SystemExit(f"the bare loop read no rows of the {written:,} written ({what})")
    tool, bare = rows / tool_seconds, rows / bare_seconds
    print(f"catch-up over {rows:,} row changes ({what}, {written:,} written), start included:")
    print(f"  mariadb-binlog -v (C):              {tool:>10,.0f} rows/s")
    print(f"  bare python-mysql-replication loop: {bare:>10,.0f} rows/s")
    for target, (seconds, peak, cpu) in runs.items():
        rate = rows / seconds
        print(
            f"  sluice run into {target + ':':<19}{rate:>10,.0f} rows/s  ({rate / tool:.2f}x mariadb-binlog, "
            f"{rate / bare:.2f}x the bare loop; peak RSS {peak:,.0f} MB)"
        )
        print(f"    {cpu}")


def profile_file(args: argparse.Namespace, run: str) -> Path | None:
    return args.profile / f"{run}.{args.profile_format}" if args.profile else None


def main() -> None:
    from tests.bench.servers import add_servers_option, announce
    from tests.harness.services import running_services, scratch_directory, start_mariadb

    parser = argparse.ArgumentParser()
    add_servers_option(parser)
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--singles", type=int, default=100_000, help="single-row transactions (0: none)")
    parser.add_argument("--profile", type=Path, help="a directory for py-spy's samples of each catch-up")
    parser.add_argument(
        "--profile-format", default="raw", choices=("raw", "speedscope"), help="collapsed stacks, or a timeline"
    )
    parser.add_argument("--targets", default="PostgreSQL,MariaDB,Iceberg", help="the targets to catch up into")
    args = parser.parse_args()
    base = scratch_directory("sluice-catchup-bench-", removed_at_exit=True)
    with running_services(base, args.servers) as (mariadb, postgresql):
        announce(args.servers, mariadb, postgresql)
        target = start_mariadb(base / "mysql-target", server_id=2, settings=args.servers)
        try:
            mariadb.execute("CREATE DATABASE bench")
            mariadb.execute(
                TABLE_DDL,
                "INSERT INTO bench.orders SELECT seq, CONCAT('customer-', seq % 9973), seq / 100, seq % 50, "
                f"NOW(6), IF(seq % 3 = 0, NULL, CONCAT('note ', seq)) FROM seq_1_to_{ROWS}",
                database="bench",
            )
            env = sluice_env(mariadb, postgresql, target)
            pids = servers(mariadb, postgresql, target)
            sinks = {
                "PostgreSQL": postgres_sink(postgresql),
                "MariaDB": mysql_sink(target),
                "Iceberg": iceberg_sink(base / "iceberg"),
            }
            sinks = {name: sinks[name] for name in args.targets.split(",")}
            pipelines = {}
            for i, (name, sink) in enumerate(sinks.items()):
                definition = pipeline_yaml(mariadb, "bench.orders", sink, name=f"catchup-bench-{name.lower()}")
                definition["source"]["server-id"] = f"{7960 + 4 * i}-{7963 + 4 * i}"
                pipeline = write_pipeline(base / f"catchup-{name.lower()}.yaml", definition)
                pipelines[name] = stopped_streaming(pipeline, base / f"state-{name.lower()}", env, 600)
            print(f"pipelines stopped; writing about {args.changes:,} row changes ...", flush=True)
            start, end, written = write_changes(mariadb, args.changes)
            rows, bare_seconds = bare_loop(mariadb.endpoint(), start, end)
            tool_seconds = mariadb_binlog(mariadb, start, end)
            runs = {
                name: catch_up(pipeline, state, env, end, pids, profile_file(args, f"mixed-{name.lower()}"))
                for name, (pipeline, state) in pipelines.items()
            }
            report("mixed transactions", rows, written, tool_seconds, bare_seconds, runs)
            if args.singles and "PostgreSQL" in pipelines:
                print(f"writing {args.singles:,} single-row transactions ...", flush=True)
                start, end, written = write_single_row_commits(mariadb, args.singles)
                rows, bare_seconds = bare_loop(mariadb.endpoint(), start, end)
                tool_seconds = mariadb_binlog(mariadb, start, end)
                pipeline, state = pipelines["PostgreSQL"]
                profile = profile_file(args, "singles-postgresql")
                runs = {"PostgreSQL": catch_up(pipeline, state, env, end, pids, profile)}
                report("one row a transaction", rows, written, tool_seconds, bare_seconds, runs)
        finally:
            target.stop()


if __name__ == "__main__":
    main()
