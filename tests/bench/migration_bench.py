"""`make bench` (migration part): a captured table of a million rows migrated by gh-ost's
statement sequence (tests/harness/gh_ost.py: the row copy in chunks, with a write to the table
between chunks, and the atomic cut-over) while `sluice run` streams it into PostgreSQL, once
with `scan.parse.online.schema.changes.enabled` and once without. For each: the pipeline's
peak lag during the migration, its pause at the cut-over (from the pause to the resumption,
as it says them), and the rows it wrote to the target during the migration (its changelog
rows, and the rows of a table it read whole) against the changelog rows the source's
changes to the table make (an update is two). With the option the two are close; without it the table is read
whole again at the cut-over.

Usage: python -m tests.bench.migration_bench [--rows N] [--chunk N]. A benchmark, not a test:
it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.servers import add_servers_option, announce
from tests.harness.gh_ost import CUT_OVER, gh_ost_migration
from tests.harness.pipelines import (
    SLUICE,
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    wait_until_in_binlog_phase,
    write_pipeline,
)
from tests.harness.services import MariaDB, PostgreSQL, running_services, scratch_directory

_ROWS = re.compile(r"binlog: stopped at \S+, ([\d,]+) row changes")
_JOINED = re.compile(r"capture: .* snapshotted \(\d+ splits, ([\d,]+) rows\)")
_LAG = re.compile(r"binlog: at \S+, [\d,]+ row changes, lag ([\d.]+)s")


@dataclass
class SaidLines:
    """A run's stderr, line by line, each with when it came."""

    lines: list[tuple[float, str]] = field(default_factory=list)

    def follow(self, process: subprocess.Popen) -> threading.Thread:
        def read() -> None:
            for line in process.stderr:  # type: ignore[union-attr]
                self.lines.append((time.monotonic(), line.rstrip("\n")))

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        return thread

    def pause(self, events: str, after: float) -> str:
        """From the pause at the first schema change whose events match to its resumption."""
        pattern = re.compile(rf"schema change (\S+) .*: paused, .*{events}")
        found = next(((t, m.group(1)) for t, line in self.lines if t >= after and (m := pattern.search(line))), None)
        if found is None:
            return "none"
        paused, change = found
        resumed = next(
            (t for t, line in self.lines if t >= paused and f"{change} " in line and "resumed" in line), None
        )
        return f"{resumed - paused:.1f} s" if resumed is not None else "not resumed"

    def peak_lag(self, start: float, end: float) -> float:
        lags = [float(m.group(1)) for t, line in self.lines if start <= t <= end and (m := _LAG.search(line))]
        return max(lags, default=0.0)


def rows_written(said: SaidLines) -> int:
    """The rows the run wrote: its binlog phase's changelog rows (its last progress line),
    and the rows of tables it read whole when they joined the capture."""
    binlog = [int(m.group(1).replace(",", "")) for _, line in said.lines if (m := _ROWS.search(line))]
    joined = sum(int(m.group(1).replace(",", "")) for _, line in said.lines if (m := _JOINED.search(line)))
    return (binlog[-1] if binlog else 0) + joined


MARK = -424242


def _arrived(postgresql: PostgreSQL, schema: str) -> bool:
    with postgresql.connect() as conn:
        try:
            row = conn.execute(f'SELECT v FROM "{schema}".t WHERE id = 0').fetchone()
        except Exception:  # noqa: BLE001 - the table is being replaced (a swap read whole)
            return False
    return row is not None and row[0] == MARK


def migrate_once(
    base: Path, mariadb: MariaDB, postgresql: PostgreSQL, database: str, rows: int, chunk: int, option: bool
) -> str:
    mariadb.execute(f"CREATE DATABASE {database}")
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO t SELECT seq, seq FROM seq_0_to_{rows - 1}",
        database=database,
    )
    definition = pipeline_yaml(
        mariadb,
        f"{database}.t",  # without the option, the copy joins the capture at the cut-over
        postgres_sink(postgresql),
        name=f"migration-{database}",
        **{"scan.parse.online.schema.changes.enabled": option},
    )
    definition["pipeline"]["schema.change.behavior"] = "evolve"
    path = write_pipeline(base / f"{database}.yaml", definition)
    state = base / f"state-{database}"
    process = subprocess.Popen(
        [*SLUICE, "run", str(path), "--state-dir", str(state)],
        env=sluice_env(mariadb, postgresql),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = SaidLines()
    reader = said.follow(process)
    try:
        wait_until_in_binlog_phase(process, state, time.monotonic() + 1800)
        statements, changes = gh_ost_migration(database, rows, chunk)
        statements.append(f"UPDATE t SET v = {MARK} WHERE id = 0")  # the last change: its arrival ends the wait
        changes += 2
        started = time.monotonic()
        conn = mariadb.connect(database)
        with conn.cursor() as cur:
            for statement in statements:
                if statement.startswith(CUT_OVER):
                    cut_over = time.monotonic()
                cur.execute(statement)
        conn.close()
        migrated = time.monotonic()
        while not _arrived(postgresql, database):
            if process.poll() is not None:
                raise RuntimeError("\n".join(line for _, line in said.lines[-20:]))
            time.sleep(0.1)
        caught_up = time.monotonic()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        reader.join(timeout=10)
    written = rows_written(said)  # the run streamed nothing before the migration
    # The cut-over: t's ALTER with the option, else the swap.
    pause = said.pause(r"(AddColumnEvent\{tableId=\S+\.t,|RenameTableEvent)", after=cut_over)
    return (
        f"{'with' if option else 'without'} the option: migration {migrated - started:.1f} s, caught up "
        f"{caught_up - migrated:.1f} s after it; peak lag {said.peak_lag(started, caught_up):.1f} s; pause at "
        f"the cut-over {pause}; rows written to the target {written:,} for {changes:,} changelog rows of the "
        f"source's changes to t ({written / changes:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    add_servers_option(parser)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    args = parser.parse_args()
    base = scratch_directory("sluice-migration-bench-", removed_at_exit=True)
    with running_services(base, args.servers) as (mariadb, postgresql):
        announce(args.servers, mariadb, postgresql)
        print(
            f"a {args.rows:,}-row table migrated by gh-ost's statement sequence ({args.chunk:,}-row chunks) "
            "while sluice streams it into PostgreSQL",
            flush=True,
        )
        for database, option in (("migrate_with", True), ("migrate_without", False)):
            print(migrate_once(base, mariadb, postgresql, database, args.rows, args.chunk, option), flush=True)


if __name__ == "__main__":
    main()
