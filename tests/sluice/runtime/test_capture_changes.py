"""A table that leaves `tables` and comes back: its target, kept while it was out, is
brought up to the table's schema under the pipeline's schema-change behaviour before its
snapshot is written again (it was written in its old layout, and the first write failed)."""

from __future__ import annotations

import pytest
import yaml

from tests.harness import compare
from tests.harness.pipelines import (
    exit_message,
    pipeline_per_sink,
    postgres_sink,
    run_sluice,
    sluice_env,
    stream_until_equal,
)


def _tables(path, tables: str, behavior: str | None = None) -> None:
    definition = yaml.safe_load(path.read_text())
    definition["source"]["tables"] = tables
    if behavior:
        definition["pipeline"]["schema.change.behavior"] = behavior
    path.write_text(yaml.safe_dump(definition))


@pytest.mark.parametrize("behavior", ["lenient", "exception"])
def test_a_table_altered_while_out_of_the_capture_joins_again_in_its_new_layout(
    tmp_path, mariadb, postgresql, source_db, behavior
):
    mariadb.execute(
        "CREATE TABLE alpha (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE beta (id INT PRIMARY KEY, v INT)",
        "INSERT INTO alpha SELECT seq, seq FROM seq_1_to_20",
        "INSERT INTO beta SELECT seq, seq FROM seq_1_to_30",
        database=source_db,
    )
    ids = "7400-7401" if behavior == "lenient" else "7402-7403"
    sinks = {"postgres": (postgres_sink(postgresql), ids)}
    both = f"{source_db}.alpha, {source_db}.beta"
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, both, sinks, f"relisted-{behavior}", {"schema.change.behavior": behavior}
    )
    path, state = pipelines["postgres"]
    env = sluice_env(mariadb, postgresql)

    def rows(table: str):
        return lambda: compare.postgres_rows(postgresql, source_db, table)

    def source(table: str):
        return lambda: compare.source_rows(mariadb, source_db, table)

    stream_until_equal(pipelines, env, lambda: None, source("beta"), {"postgres": rows("beta")})

    _tables(path, f"{source_db}.alpha")  # beta leaves the capture; its target stays
    out = lambda: mariadb.execute(  # noqa: E731
        "ALTER TABLE beta ADD COLUMN extra INT NOT NULL DEFAULT 5",
        "UPDATE beta SET v = -v WHERE id <= 3",
        "UPDATE alpha SET v = 0 WHERE id = 1",
        database=source_db,
    )
    stream_until_equal(pipelines, env, out, source("alpha"), {"postgres": rows("alpha")})

    _tables(path, both)  # and comes back, altered
    if behavior == "exception":
        ran = run_sluice(path, state, env)
        assert ran.returncode != 0
        assert exit_message(ran.stderr) == (
            f"sluice: error: {source_db}.beta joins the capture, and its target table lacks the column extra, "
            "which the table has now: schema.change.behavior exception applies no schema change; "
            "add it, drop the target table (Sluice creates it anew), or set schema.change.behavior to lenient, "
            "try_evolve or evolve"
        )
        return
    stream_until_equal(
        pipelines,
        env,
        lambda: mariadb.execute("INSERT INTO beta VALUES (100, 100, 6)", database=source_db),
        source("beta"),
        {"postgres": rows("beta")},
    )
