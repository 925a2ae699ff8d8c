"""Values MySQL holds that a target's type cannot never stop the pipeline without a
decision: each has a documented rule, and a warning names table, column and key once per
column. A MySQL-dialect target holds them exactly as the source."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness import compare
from tests.harness.pipelines import SLUICE, every_sink, pipeline_per_sink, sluice_env, stream_until_equal

pytestmark = pytest.mark.slow


def test_nul_characters_are_removed_for_postgresql_and_kept_for_mariadb(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    mariadb.execute(
        "CREATE TABLE notes (id INT PRIMARY KEY, title VARCHAR(20), body TEXT)",
        "INSERT INTO notes VALUES (1, CONCAT('a', CHAR(0), 'b'), CONCAT(CHAR(0), 'x')), (2, 'plain', NULL)",
        database=source_db,
    )
    sinks = {
        name: sink for name, sink in every_sink(postgresql, mariadb_target, tmp_path, 7160).items() if name != "parquet"
    }
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.notes", sinks, "nul", {"parallelism": 1})

    def binlog_rows() -> None:  # the binlog path, inserts and updates
        mariadb.execute(
            "INSERT INTO notes VALUES (3, CONCAT('c', CHAR(0)), 'y')",
            "UPDATE notes SET body = CONCAT('z', CHAR(0), CHAR(0), 'z') WHERE id = 2",
            database=source_db,
        )

    source = lambda: compare.source_rows(mariadb, source_db, "notes")  # noqa: E731
    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        binlog_rows,
        lambda: [(1, "ab", "x"), (2, "plain", "zz"), (3, "c", "y")],
        {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "notes"),
            "mariadb": lambda: [
                tuple(v.replace("\0", "") if isinstance(v, str) else v for v in row)
                for row in compare.source_rows(mariadb_target, source_db, "notes")
            ],
        },
    )
    assert compare.source_rows(mariadb_target, source_db, "notes") == source()  # exactly, NULs included
    warnings = [line for line in said["postgres"].splitlines() if "NUL" in line]
    assert len(warnings) == 2, said["postgres"]  # once per column
    assert any(f"{source_db}.notes.title" in w and "id=1" in w and "removed" in w for w in warnings), warnings
    assert any(f"{source_db}.notes.body" in w for w in warnings), warnings
    assert not any("NUL" in line for line in said["mariadb"].splitlines())
    assert f"values changed to fit the target (sink.nul-replacement): {source_db}.notes.body 2, " in said["postgres"]
    for name, (pipeline, _) in pipelines.items():  # verify holds the target to the same rule
        checked = subprocess.run(
            [*SLUICE, "verify", str(pipeline)],
            env=sluice_env(mariadb, postgresql, mariadb_target),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert checked.returncode == 0, f"{name}: {checked.stdout}{checked.stderr}"
