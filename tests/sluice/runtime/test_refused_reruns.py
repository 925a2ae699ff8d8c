"""A pipeline's state belongs to its definition and its target: a rerun that would make
the saved progress describe something else is refused with one line naming what changed,
and nothing is written."""

from __future__ import annotations

import pytest

from tests.harness import compare
from tests.harness.pipelines import exit_message, pipeline_yaml, postgres_sink, run_sluice, sluice_env, write_pipeline


def last_line_of_a_refusal(result) -> str:
    """The CLI's exit line of a refused run: exit 1, one line, no stack trace."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Exception" not in result.stderr, result.stderr
    return exit_message(result.stderr)


@pytest.fixture
def finished_pipeline(tmp_path, mariadb, postgresql, source_db):
    """A snapshot-mode pipeline that ran to its end: its definition, state and environment."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, {i})" for i in range(50)),
        "CREATE TABLE other (id INT PRIMARY KEY)",
        database=source_db,
    )
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.t",
        postgres_sink(postgresql),
        name=f"rerun-{source_db}",
        **{"scan.startup.mode": "snapshot", "scan.incremental.snapshot.chunk.size": 10, "server-id": "6990-6995"},
    )
    state, env = tmp_path / "state", sluice_env(mariadb, postgresql)
    first = run_sluice(write_pipeline(tmp_path / "p.yaml", definition), state, env)
    assert first.returncode == 0, first.stderr
    return definition, state, env


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("source", "tables", "{db}.(t|other)"),
        ("source", "scan.incremental.snapshot.chunk.size", 7),
        ("source", "scan.startup.mode", "initial"),
        ("source", "port", 1),
        ("sink", "url", "postgresql://127.0.0.1:{pg_port}/postgres"),
    ],
)
def test_a_rerun_with_a_changed_definition_is_refused_naming_the_key(
    tmp_path, finished_pipeline, postgresql, source_db, section, key, value
):
    definition, state, env = finished_pipeline
    before = (state / "state.json").read_text()
    value = value.format(db=source_db, pg_port=postgresql.port) if isinstance(value, str) else value
    definition[section][key] = value

    result = run_sluice(write_pipeline(tmp_path / "changed.yaml", definition), state, env)

    last = last_line_of_a_refusal(result)
    assert last.startswith(f"sluice: error: {section}.{key} changed from ")
    assert f"to '{value}' since --state-dir {state} was written" in last
    assert (state / "state.json").read_text() == before


def test_what_is_safe_to_change_runs(tmp_path, finished_pipeline):
    definition, state, env = finished_pipeline
    definition["pipeline"]["parallelism"] = 1
    definition["source"]["server-id"] = "6996-6999"
    definition["source"]["scan.snapshot.fetch.size"] = 77
    definition["sink"]["sink.batch-size"] = 10

    result = run_sluice(write_pipeline(tmp_path / "tuned.yaml", definition), state, env)

    assert result.returncode == 0, result.stderr


def test_a_finished_snapshot_into_an_emptied_target_is_refused(
    tmp_path, finished_pipeline, postgresql, mariadb, source_db
):
    definition, state, env = finished_pipeline
    with postgresql.connect() as conn:
        conn.execute("DELETE FROM sluice_meta.offsets WHERE pipeline = %s", (definition["pipeline"]["name"],))
        conn.execute(f'TRUNCATE "{source_db}".t')

    result = run_sluice(write_pipeline(tmp_path / "p.yaml", definition), state, env)

    last = last_line_of_a_refusal(result)
    assert f"--state-dir {state} says the snapshot was (partly) written, but sink jdbc holds no committed" in last
    assert "run with a new --state-dir to take the snapshot again" in last
    assert compare.postgres_rows(postgresql, source_db, "t") == []


def test_a_parquet_path_with_foreign_content_is_refused_and_kept(tmp_path, mariadb, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    lake = tmp_path / "lake"
    (lake / source_db / "t" / "binlog-000000000001").mkdir(parents=True)
    (lake / "someone-elses.csv").write_text("keep me\n")
    definition = pipeline_yaml(
        mariadb, f"{source_db}.t", {"type": "parquet", "path": str(lake)}, **{"scan.startup.mode": "snapshot"}
    )

    result = run_sluice(write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "state", sluice_env(mariadb))

    last = last_line_of_a_refusal(result)
    assert last == (
        f"sluice: error: sink.path {lake} is not empty and holds no Sluice commit log (_sluice_log); "
        "point sink.path at an empty or new directory"
    )
    assert (lake / "someone-elses.csv").read_text() == "keep me\n"
    assert (lake / source_db / "t" / "binlog-000000000001").is_dir()
