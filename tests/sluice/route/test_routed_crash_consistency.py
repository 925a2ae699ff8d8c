"""The core correctness test for route and transform: four shards in two databases merged
into one table through a transform (a computed column, a filter on a column updates
change, metadata columns in the key), one shard also into an ODS copy of its own (ALL_MATCH
fan-out), while random writes run; the pipeline is SIGKILLed
through snapshot, switch and streaming, then two shards' qty is widened. At the end the
target equals the query its route and transform describe, computed by MariaDB itself."""

from __future__ import annotations

import os
import threading
import time

from sluice.source.connection import current_offset
from tests.harness import compare
from tests.harness.kills import run_with_kills, stop_caught_up, wait_for
from tests.harness.pipelines import pipeline_yaml, postgres_sink, sluice_env, write_pipeline
from tests.harness.workload import RandomWorkload, create_table

SEED = int(os.environ.get("SLUICE_SOAK_SEED", "20261126"))
ROWS = int(os.environ.get("SLUICE_SOAK_ROWS", "3000")) // 4  # per shard
KILLS = int(os.environ.get("SLUICE_SOAK_KILLS", "5"))
PROJECTION = (
    "id, name, qty, amount * 2 AS doubled, CASE WHEN qty >= 250 THEN 'big' ELSE 'small' END AS size, "
    "__table_name__ AS shard, __schema_name__ AS db"
)
FILTER = "qty < 500"
WIDENED = ("orders_0", "orders_2")  # one shard in each database


def _query(mariadb, shards: dict[str, str]) -> list[tuple]:
    """The route and transform as SQL, evaluated by the source server."""
    return compare.query_rows(
        mariadb,
        " UNION ALL ".join(
            f"SELECT id, name, qty, amount * 2, CASE WHEN qty >= 250 THEN 'big' ELSE 'small' END, '{shard}', "
            f"'{database}' FROM `{database}`.{shard} WHERE {FILTER}"
            for shard, database in shards.items()
        ),
    )


def test_a_merged_transformed_table_equals_its_query_after_repeated_sigkills(
    tmp_path, mariadb, postgresql, source_db, shards
):
    for i, (shard, database) in enumerate(shards.items()):
        create_table(mariadb, database, shard, ROWS, seed=SEED + i)
    selected = f"{source_db}(_b)?.orders_[0-3]"
    definition = pipeline_yaml(
        mariadb,
        selected,
        postgres_sink(postgresql),
        name="routed-crash",
        **{"scan.incremental.snapshot.chunk.size": max(ROWS // 6, 50), "server-id": "7400-7410"},
    )
    definition["pipeline"]["schema.change.behavior"] = "evolve"
    definition["route"] = [
        {"source-table": selected, "sink-table": f"{source_db}.orders"},
        {"source-table": f"{source_db}.orders_0", "sink-table": f"{source_db}.ods_orders_0"},
    ]
    definition["transform"] = [
        {"source-table": selected, "projection": PROJECTION, "filter": FILTER, "primary-keys": "id, shard, db"}
    ]
    pipeline = write_pipeline(tmp_path / "routed.yaml", definition)
    env = sluice_env(mariadb, postgresql)
    workloads = [
        RandomWorkload(mariadb, database, [s for s, d in shards.items() if d == database], SEED + k, ROWS * 10)
        for k, database in enumerate(dict.fromkeys(shards.values()))
    ]
    for workload in workloads:
        workload.start(operations=10**9, rate=75)

    final: dict = {}
    state_dir = tmp_path / "state"
    kills = threading.Thread(
        target=run_with_kills, args=("postgres", pipeline, state_dir, env, SEED, final, KILLS, 0.4)
    )
    kills.start()
    kills.join()
    assert not isinstance(final["postgres"], BaseException), final["postgres"]
    process, phases = final["postgres"]
    wait_for(state_dir, process, lambda s: "binlog" in s)
    for shard in WIDENED:  # a schema change on two shards: the merged table's qty widens once
        mariadb.execute(f"ALTER TABLE {shard} MODIFY qty BIGINT", database=shards[shard])
    time.sleep(2)
    for workload in workloads:
        workload.join()
    print(f"seed {SEED}: {sum(w.operations for w in workloads)} random operations on 4 shards of {ROWS} rows")

    conn = mariadb.connect()
    end = current_offset(conn)
    conn.close()
    stop_caught_up("postgres", state_dir, process, phases, end)

    expected = _query(mariadb, shards)
    held = compare.postgres_rows(postgresql, source_db, "orders")
    assert held == expected, compare.diff(expected, held)
    expected_ods = _query(mariadb, {"orders_0": source_db})
    held_ods = compare.postgres_rows(postgresql, source_db, "ods_orders_0")
    assert held_ods == expected_ods, compare.diff(expected_ods, held_ods)
    with postgresql.connect() as pg:
        (qty_type,) = pg.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = %s AND table_name = 'orders' "
            "AND column_name = 'qty'",
            (source_db,),
        ).fetchone()
    assert qty_type == "bigint"
