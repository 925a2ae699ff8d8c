"""Every failure a user can cause ends the CLI with one line naming what to fix: no Python
or Java stack trace, and never a password."""

from __future__ import annotations

import pytest

from tests.harness.pipelines import exit_message, pipeline_yaml, postgres_sink, run_sluice, sluice_env, write_pipeline

SECRET = "s3cr3t-pw"


def one_line_failure(result, code: int = 1) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and "Exception" not in result.stderr, result.stderr
    assert "at org.apache" not in result.stderr and "py4j" not in result.stderr, result.stderr
    assert SECRET not in result.stderr
    return exit_message(result.stderr)


def _run(tmp_path, mariadb, postgresql, definition, **env):
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)
    return run_sluice(pipeline, tmp_path / "state", {**sluice_env(mariadb, postgresql), **env}, timeout=180)


def test_java_missing_is_named_with_how_to_install_it(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    # The parquet sink writes with Spark (a small plan into a database never starts Spark).
    definition = pipeline_yaml(mariadb, f"{source_db}.t", {"type": "parquet", "path": str(tmp_path / "lake")})

    last = one_line_failure(_run(tmp_path, mariadb, postgresql, definition, JAVA_HOME="/opt/no-java-here"))

    assert last == (
        "sluice: error: Spark needs Java 17 and found none (JAVA_HOME=/opt/no-java-here has no bin/java); install it "
        "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
    )


def test_a_plan_smaller_than_one_spark_job_is_read_without_starting_spark(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(8))", database=source_db)
    mariadb.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')", database=source_db)
    definition = pipeline_yaml(
        mariadb, f"{source_db}.t", postgres_sink(postgresql), **{"scan.startup.mode": "snapshot"}
    )

    result = _run(tmp_path, mariadb, postgresql, definition, JAVA_HOME="/opt/no-java-here")

    assert result.returncode == 0, result.stderr
    assert "snapshot: 1 split, less than one Spark job: read by the driver, Spark does not start" in result.stderr
    with postgresql.connect() as conn:
        assert conn.execute(f"SELECT count(*) FROM {source_db}.t").fetchone()[0] == 3


def test_a_local_plan_of_many_spark_jobs_is_read_by_the_driver_threads_without_spark(
    tmp_path, mariadb, postgresql, source_db
):
    # 600,000 rows: 75 default chunks, more than one Spark job's 64. A local master's
    # executors would be processes on this machine, as many as the driver's threads.
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t SELECT seq FROM seq_1_to_600000", database=source_db
    )
    definition = pipeline_yaml(
        mariadb, f"{source_db}.t", postgres_sink(postgresql), parallelism=2, **{"scan.startup.mode": "snapshot"}
    )

    result = _run(tmp_path, mariadb, postgresql, definition, JAVA_HOME="/opt/no-java-here")

    assert result.returncode == 0, result.stderr
    assert (
        "snapshot: 75 splits, read by the driver's 2 threads: local Spark would add no cores, it does not start"
        in result.stderr
    )
    with postgresql.connect() as conn:
        assert conn.execute(f"SELECT count(*), sum(id) FROM {source_db}.t").fetchone() == (600_000, 180_000_300_000)


@pytest.mark.parametrize("content", ['{"snapshot": []}', "[1, 2]", "not json at all"])
def test_a_state_file_that_is_not_a_pipeline_state_is_refused(tmp_path, mariadb, postgresql, source_db, content):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "state.json").write_text(content)
    definition = pipeline_yaml(mariadb, f"{source_db}.t", postgres_sink(postgresql))

    last = one_line_failure(_run(tmp_path, mariadb, postgresql, definition))

    assert last.startswith(f"sluice: error: --state-dir {tmp_path / 'state'}: state.json ")
    assert "is not a Sluice pipeline state" in last or "is unreadable" in last


def test_a_chunk_key_of_an_unsupported_type_is_named(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE docs (body JSON, score DOUBLE)", database=source_db)
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.docs",
        postgres_sink(postgresql),
        **{"scan.incremental.snapshot.chunk.key-column": f"{source_db}.docs:score"},
    )

    last = one_line_failure(_run(tmp_path, mariadb, postgresql, definition))

    assert last == (
        f"sluice: error: source.scan.incremental.snapshot.chunk.key-column: column 'score' of {source_db}.docs is "
        "double, which cannot split a table into exact chunks; choose an integer, decimal, date/time or string column"
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (f"http://loader:{SECRET}@warehouse/db", "sink.url: 'http://loader:***@warehouse/db' must start with"),
        (f"postgresql://loader:{SECRET}@warehouse:99999/db", "sink.url: 'postgresql://loader:***@warehouse:99999/db'"),
        (f"postgresql://loader:{SECRET}@warehouse/db", "sink.url: put credentials in sink.username and sink.password"),
        ("postgresql://[warehouse/db", "sink.url: Invalid IPv6 URL"),
    ],
)
def test_a_bad_sink_url_is_named_without_its_password(tmp_path, mariadb, postgresql, url, message):
    definition = pipeline_yaml(mariadb, "db.t", {**postgres_sink(postgresql), "url": url})

    last = one_line_failure(_run(tmp_path, mariadb, postgresql, definition), code=2)

    assert last.startswith(f"sluice: error: {message}")


def test_an_unknown_time_zone_is_refused_before_anything_runs(tmp_path, mariadb, postgresql):
    definition = pipeline_yaml(mariadb, "db.t", postgres_sink(postgresql), **{"server-time-zone": "Mars/Olympus"})

    last = one_line_failure(_run(tmp_path, mariadb, postgresql, definition), code=2)

    assert last.startswith("sluice: error: source.server-time-zone: 'Mars/Olympus' is not a time zone")


def test_a_target_database_that_does_not_exist_is_named(tmp_path, mariadb, postgresql, source_db):
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=source_db)
    url = f"postgresql://{postgresql.host}:{postgresql.port}/no_such_db"
    definition = pipeline_yaml(mariadb, f"{source_db}.t", {**postgres_sink(postgresql), "url": url})

    last = one_line_failure(_run(tmp_path, mariadb, postgresql, definition))

    assert last.startswith(
        f"sluice: error: sink JdbcTarget(postgresql://{postgresql.host}:{postgresql.port}/no_such_db)"
    )
    assert 'database "no_such_db" does not exist' in last


def test_the_version_is_the_installed_distributions():
    import subprocess
    from importlib.metadata import version

    from tests.harness.pipelines import SLUICE

    said = subprocess.run([*SLUICE, "--version"], capture_output=True, text=True, timeout=60)
    assert said.returncode == 0 and said.stdout.strip() == f"sluice {version('sluice')}"
