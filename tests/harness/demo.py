"""`make demo`: a local MariaDB with sample data → Sluice on local Spark → a local PostgreSQL.

Shows the snapshot, then changes made on the source while Sluice streams, then a schema
change (the pipeline pauses, applies it to the target and resumes), then the target.
"""

from __future__ import annotations

import re
import signal
import time

from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)
from tests.harness.services import running_services, scratch_directory

WATCHED = "id <= 6 OR id >= 50000"  # the rows the live changes touch


def show(postgresql, title: str, columns: str = "id, customer, amount, status") -> list[tuple]:
    with postgresql.connect() as conn:
        (count,) = conn.execute("SELECT count(*) FROM shop.orders").fetchone()
        rows = conn.execute(f"SELECT {columns} FROM shop.orders WHERE {WATCHED} ORDER BY id").fetchall()
    print(f"\n--- {title}: shop.orders in PostgreSQL, {count:,} rows; those with {WATCHED}: ---")
    for row in rows:
        print("   ", row)
    return rows


def wait_for(postgresql, condition: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with postgresql.connect() as conn:
            if conn.execute(f"SELECT count(*) FROM shop.orders WHERE {condition}").fetchone()[0]:
                return
        time.sleep(0.2)
    raise SystemExit(f"the live changes did not reach PostgreSQL within {timeout:.0f}s")


def demo_problems(said: str) -> list[str]:
    """What the demo's output fails to show of what the README says it shows."""
    expected = {
        # Every split read; how many there are follows InnoDB's row estimate (10 or 11).
        "the whole snapshot": re.search(r"snapshot: (\d+)/\1 splits, 50,000 rows", said),
        "the target after the schema change": "--- after the schema change: shop.orders in PostgreSQL, 50,001 rows"
        in said,
        "a row that uses the new column": "(60001, 'mobile-user', 'app', Decimal('7.25'), 'new')" in said,
        "the schema change applied": "applied to the target" in said and "resumed after it" in said,
        "a clean stop": "sluice exited with 0 after SIGTERM" in said,
    }
    return [f"no {what} in its output" for what, shown in expected.items() if not shown]


def main() -> None:
    base = scratch_directory("sluice-demo-", removed_at_exit=True)
    print("starting MariaDB (binlog on) and PostgreSQL in", base, "(removed when the demo ends well)")
    with running_services(base) as (mariadb, postgresql):
        mariadb.execute(
            "SET SESSION max_recursive_iterations = 1000000",
            "CREATE DATABASE shop",
            "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(40), amount DECIMAL(10,2), "
            "status VARCHAR(12))",
            "INSERT INTO shop.orders WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 50000) "
            "SELECT n, CONCAT('customer-', n % 97), n % 1000 + 0.99, 'new' FROM s",
        )
        definition = pipeline_yaml(
            mariadb,
            "shop.orders",
            postgres_sink(postgresql),
            name="demo",
            **{"scan.incremental.snapshot.chunk.size": 5000},
        )
        pipeline = write_pipeline(base / "demo.yaml", definition)
        print(f"\npipeline definition ({pipeline}):\n{pipeline.read_text()}")
        process = start_sluice(pipeline, base / "state", sluice_env(mariadb, postgresql))
        wait_until_in_binlog_phase(process, base / "state", time.monotonic() + 300)
        show(postgresql, "after the snapshot")
        print("\nchanging the source while Sluice streams: update, delete, insert, primary-key change")
        mariadb.execute(
            "UPDATE shop.orders SET status = 'shipped' WHERE id <= 3",
            "DELETE FROM shop.orders WHERE id = 4",
            "INSERT INTO shop.orders VALUES (0, 'walk-in', 12.50, 'paid')",
            "UPDATE shop.orders SET id = 60000 WHERE id = 5",
        )
        wait_for(postgresql, "id = 60000")
        show(postgresql, "after live changes")
        print("\nchanging the schema while Sluice streams: ALTER TABLE ADD COLUMN, then rows that use it")
        mariadb.execute(
            "UPDATE shop.orders SET status = 'paid' WHERE id = 6",
            "ALTER TABLE shop.orders ADD COLUMN channel VARCHAR(10) AFTER customer",
            "UPDATE shop.orders SET channel = 'web' WHERE id = 1",
            "INSERT INTO shop.orders VALUES (60001, 'mobile-user', 'app', 7.25, 'new')",
        )
        wait_for(postgresql, "id = 60001")
        show(postgresql, "after the schema change", "id, customer, channel, amount, status")
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        shown = ("snapshot", "binlog", "schema change")
        print("\nsluice output:\n" + "\n".join("    " + line for line in err.splitlines() if line.startswith(shown)))
        print(f"\nsluice exited with {process.returncode} after SIGTERM (changes committed, position saved).")


if __name__ == "__main__":
    main()
