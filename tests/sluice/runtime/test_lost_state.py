"""The target is the truth; a state directory is a cache of it. A run that lost its state (a
fresh --state-dir against a target that is kept) adopts what the target holds: a streaming
pipeline streams on from its committed position without reading a chunk, a pipeline
stopped mid-snapshot reads only the chunks the target lacks, and the target still equals
the source row for row, bag tables and rows deleted meanwhile included. A definition that
is not the one the target's records belong to is refused, naming the key."""

from __future__ import annotations

import re
import signal
import time

import pytest

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.pipelines import (
    kill_pipeline,
    mysql_sink,
    pipeline_yaml,
    postgres_sink,
    read_state,
    run_sluice,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    wait_until_target_is,
    write_pipeline,
)
from tests.harness.services import start_mariadb

pytestmark = pytest.mark.slow


def both(mariadb_or_rows, source_db: str, postgresql=None) -> list[tuple]:
    """The keyed table's rows and the bag's, tagged, from the source or (with `postgresql`) the target."""
    if postgresql is None:
        read = lambda t: compare.source_rows(mariadb_or_rows, source_db, t)  # noqa: E731
    else:
        read = lambda t: compare.postgres_rows(postgresql, source_db, t)  # noqa: E731
    return sorted((table, *row) for table in ("orders", "notes") for row in read(table))


@pytest.fixture
def tables(mariadb, source_db) -> str:
    return create_tables(mariadb, source_db)


def create_tables(mariadb, source_db: str) -> str:
    mariadb.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, total INT)",
        "INSERT INTO orders WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 3000) "
        "SELECT n, n FROM s",
        "CREATE TABLE notes (author INT, note VARCHAR(10))",  # a bag: no key at all
        "INSERT INTO notes WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 600) "
        "SELECT n % 50, 'same' FROM s",
        database=source_db,
    )
    return f"{source_db}.(orders|notes)"


def definition(mariadb, postgresql, source_db, tables, mode: str = "initial", chunk_size: int = 200) -> dict:
    return pipeline_yaml(
        mariadb,
        tables,
        postgres_sink(postgresql),
        name=f"lost-{source_db}",
        **{
            "scan.startup.mode": mode,
            "scan.incremental.snapshot.chunk.size": chunk_size,
            "scan.incremental.snapshot.chunk.key-column": f"{source_db}.notes:author",
            "server-id": "6960-6965",
        },
    )


def run_until_equal(server, postgresql, source_db, pipeline, state_dir, env, then=None) -> str:
    """Runs the pipeline until it streams with the target equal to the source (again after
    `then()`, if given), stops it with SIGTERM, and returns what it said."""
    process = start_sluice(pipeline, state_dir, env)
    try:
        wait_until_in_binlog_phase(process, state_dir, time.monotonic() + 180)
        target = lambda: both(None, source_db, postgresql)  # noqa: E731
        wait_until_target_is(process, both(server, source_db), target, time.monotonic() + 180)
        if then is not None:
            then()
            wait_until_target_is(process, both(server, source_db), target, time.monotonic() + 60)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        return err
    finally:
        if process.poll() is None:
            kill_pipeline(process)


def changes_while_nothing_runs(mariadb, source_db: str) -> None:
    mariadb.execute(
        "DELETE FROM orders WHERE id % 30 = 0",
        "UPDATE orders SET total = -1 WHERE id % 31 = 0",
        "INSERT INTO notes VALUES (7, 'same'), (7, 'same')",
        "DELETE FROM notes WHERE author = 3 LIMIT 4",
        database=source_db,
    )


def test_a_streaming_pipeline_with_a_fresh_state_directory_streams_on_from_the_targets_records(
    tmp_path, mariadb, postgresql, source_db, tables
):
    pipeline = write_pipeline(tmp_path / "p.yaml", definition(mariadb, postgresql, source_db, tables))
    env = sluice_env(mariadb, postgresql)
    run_until_equal(mariadb, postgresql, source_db, pipeline, tmp_path / "state", env)
    changes_while_nothing_runs(mariadb, source_db)
    err = run_until_equal(mariadb, postgresql, source_db, pipeline, tmp_path / "fresh-state", env)
    assert "adopting the records of pipeline" in err, err
    assert "snapshot:" not in err, err  # not one chunk read again
    assert "binlog" in read_state(tmp_path / "fresh-state")  # the cache holds the adopted state


def test_a_finished_snapshot_run_with_a_fresh_state_directory_leaves_the_target_equal_to_the_source(
    tmp_path, mariadb, postgresql, source_db, tables
):
    pipeline = write_pipeline(tmp_path / "p.yaml", definition(mariadb, postgresql, source_db, tables, "snapshot"))
    env = sluice_env(mariadb, postgresql)
    first = run_sluice(pipeline, tmp_path / "state", env)
    assert first.returncode == 0, first.stderr
    assert both(None, source_db, postgresql) == both(mariadb, source_db)
    changes_while_nothing_runs(mariadb, source_db)
    again = run_sluice(pipeline, tmp_path / "fresh-state", env)
    assert again.returncode == 0, again.stderr
    assert "adopting the records of pipeline" in again.stderr, again.stderr
    assert both(None, source_db, postgresql) == both(mariadb, source_db)  # no bag row twice, no deleted row left


def test_a_pipeline_stopped_mid_snapshot_reads_only_the_chunks_the_target_lacks(
    tmp_path, mariadb, postgresql, source_db, tables
):
    small_chunks = definition(mariadb, postgresql, source_db, tables, "snapshot", chunk_size=20)
    # One reader: it commits one table's splits (one read view) and is killed as it records
    # them, before it takes the other table. With two, both tables could be committed by then
    # (a loaded machine's timing), leaving nothing to resume.
    small_chunks["pipeline"]["parallelism"] = 1
    pipeline = write_pipeline(tmp_path / "p.yaml", small_chunks)
    env = sluice_env(mariadb, postgresql)
    stopped = run_sluice(pipeline, tmp_path / "state", {**env, "SLUICE_FAILPOINT": "snapshot:split-finished:5"})
    assert stopped.returncode != 0
    with postgresql.connect() as conn:  # what the target committed before the kill
        (committed,) = conn.execute(
            "SELECT count(*) FROM sluice_meta.offsets WHERE pipeline = %s", (f"lost-{source_db}",)
        ).fetchone()
    again = run_sluice(pipeline, tmp_path / "fresh-state", env)
    assert again.returncode == 0, again.stderr
    assert "adopting the records of pipeline" in again.stderr
    resumed = re.search(r"snapshot: resuming, (\d+) of (\d+) splits already finished", again.stderr)
    assert resumed and int(resumed[1]) == committed < int(resumed[2]), (committed, again.stderr)
    assert both(None, source_db, postgresql) == both(mariadb, source_db)


def test_a_definition_the_targets_records_do_not_belong_to_is_refused_naming_the_key(
    tmp_path, mariadb, postgresql, source_db, tables
):
    env = sluice_env(mariadb, postgresql)
    first = definition(mariadb, postgresql, source_db, tables, "snapshot")
    assert run_sluice(write_pipeline(tmp_path / "a.yaml", first), tmp_path / "state", env).returncode == 0
    changed = definition(mariadb, postgresql, source_db, tables, "snapshot")
    changed["source"]["scan.incremental.snapshot.chunk.size"] = 100
    refused = run_sluice(write_pipeline(tmp_path / "b.yaml", changed), tmp_path / "fresh-state", env)
    assert refused.returncode == 1
    last = refused.stderr.strip().splitlines()[-1]
    assert "scan.incremental.snapshot.chunk.size changed from '200' to '100'" in last, refused.stderr
    assert f"the records of pipeline 'lost-{source_db}'" in last and "new pipeline.name" in last


def all_three(server, source_db: str, postgresql=None) -> list[tuple]:
    """The keyed, bag and string-keyed tables' rows, tagged: from a MariaDB (source or
    MySQL-dialect target) or, with `postgresql`, from PostgreSQL."""
    if postgresql is None:
        read = lambda t: compare.source_rows(server, source_db, t)  # noqa: E731
    else:
        read = lambda t: compare.postgres_rows(postgresql, source_db, t)  # noqa: E731
    return sorted((table, *map(str, row)) for table in ("orders", "notes", "tags", "codes") for row in read(table))


@pytest.mark.parametrize("target", ["postgres", "mariadb"])
def test_a_snapshot_into_a_target_that_holds_rows_leaves_it_exact(
    request, tmp_path, mariadb, postgresql, mariadb_target, source_db, tables, target
):
    """Each chunk replaces its key range in the target: rows the source deleted, copies of a
    bag's rows, rows below the first chunk and above the last, and NULL chunk keys are gone
    after a new pipeline snapshots into a kept target; also when that pipeline is stopped
    mid-snapshot and resumes (string keys under a collation included)."""
    mariadb.execute(
        "CREATE TABLE tags (name VARCHAR(20) PRIMARY KEY, n INT)",  # the server's default collation
        "INSERT INTO tags WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 400) "
        "SELECT CONCAT(IF(n % 2, 'tag-', 'TAG-'), LPAD(n, 4, '0')), n FROM s",
        "CREATE TABLE codes (code INT NOT NULL, v INT, UNIQUE KEY (code))",  # keyed by a unique key
        "INSERT INTO codes SELECT seq * 3, seq FROM seq_1_to_300",
        database=source_db,
    )
    tables = f"{source_db}.(orders|notes|tags|codes)"
    sink = postgres_sink(postgresql) if target == "postgres" else mysql_sink(mariadb_target)
    rows_in_target = (
        (lambda: all_three(None, source_db, postgresql))
        if target == "postgres"
        else (lambda: all_three(mariadb_target, source_db))
    )
    env = sluice_env(mariadb, postgresql, mariadb_target)

    def pipeline(name: str, path: str):
        definition = pipeline_yaml(
            mariadb,
            tables,
            sink,
            name=f"{name}-{target}-{source_db}",
            **{
                "scan.startup.mode": "snapshot",
                "scan.incremental.snapshot.chunk.size": 20,
                "scan.incremental.snapshot.chunk.key-column": f"{source_db}.notes:author",
                "server-id": "6966-6969",
            },
        )
        return write_pipeline(tmp_path / path, definition)

    first = run_sluice(pipeline("first", "a.yaml"), tmp_path / "a", env)
    assert first.returncode == 0, first.stderr
    assert rows_in_target() == all_three(mariadb, source_db)
    changes_while_nothing_runs(mariadb, source_db)
    mariadb.execute(
        "DELETE FROM orders WHERE id < 5 OR id > 2990",  # the first and the last chunk lose rows
        "DELETE FROM tags WHERE n % 7 = 0",
        "DELETE FROM codes WHERE code % 4 = 0 OR code = 900",
        "UPDATE tags SET n = -n WHERE n % 11 = 0",
        "INSERT INTO notes VALUES (NULL, 'null key')",
        database=source_db,
    )
    stale = [
        f"INSERT INTO {source_db}.notes VALUES (NULL, 'stale'), (NULL, 'stale')",  # NULL keys: the first chunk's
        f"INSERT INTO {source_db}.orders VALUES (-7, 0), (99999, 0)",
        f"INSERT INTO {source_db}.tags VALUES ('a-stale', 0), ('ZZ-stale', 0), ('tag-0100x', 0)",
        f"INSERT INTO {source_db}.codes VALUES (1, 0), (2000, 0)",
    ]
    if target == "postgres":
        with postgresql.connect() as conn:
            for statement in stale:
                conn.execute(statement)
    else:
        mariadb_target.execute(*stale)

    # A new pipeline name, stopped after a few chunks and resumed: its chunks replace what
    # the kept target holds in their ranges, the first pipeline's rows included.
    second = pipeline("second", "b.yaml")
    stopped = run_sluice(second, tmp_path / "b", {**env, "SLUICE_FAILPOINT": "snapshot:split-finished:30"})
    assert stopped.returncode != 0
    resumed = run_sluice(second, tmp_path / "b", env)
    assert resumed.returncode == 0, resumed.stderr
    want, got = all_three(mariadb, source_db), rows_in_target()
    assert got == want, compare.diff(want, got)


def test_a_pipeline_whose_position_was_purged_reads_the_snapshot_again_exactly(
    tmp_path, services_dir, postgresql, source_db
):
    """The binlog after the target's position is gone (a retention shorter than an outage):
    the run says so and reads the snapshot again, each chunk replacing its range, so rows
    deleted meanwhile go and a bag's rows are not doubled; then it streams on."""
    server = start_mariadb(services_dir / f"purged-{source_db}", server_id=33)
    try:
        server.execute(f"CREATE DATABASE {source_db}")
        tables = create_tables(server, source_db)
        pipeline = write_pipeline(tmp_path / "p.yaml", definition(server, postgresql, source_db, tables))
        env = sluice_env(server, postgresql)
        run_until_equal(server, postgresql, source_db, pipeline, tmp_path / "state", env)
        changes_while_nothing_runs(server, source_db)
        server.purge_binlogs()
        streams_on = lambda: server.execute(f"INSERT INTO {source_db}.orders VALUES (100000, 1)")  # noqa: E731
        err = run_until_equal(server, postgresql, source_db, pipeline, tmp_path / "state", env, then=streams_on)
        assert "is no longer on the source: reading the snapshot again" in err, err
    finally:
        server.stop()


def test_a_parquet_changelog_adopts_its_commit_log_after_the_state_is_lost(
    tmp_path, mariadb, postgresql, source_db, tables
):
    """The parquet sink keeps the state document beside its commit log: a rerun with a fresh
    state directory reads no snapshot into the changelog a second time, and replaying the
    log (which fails on any change seen twice) gives the source."""
    lake = tmp_path / "lake"
    definition = pipeline_yaml(
        mariadb,
        tables,
        {"type": "parquet", "path": str(lake)},
        name=f"lost-parquet-{source_db}",
        **{
            "scan.startup.mode": "snapshot",
            "scan.incremental.snapshot.chunk.key-column": f"{source_db}.notes:author",
            "server-id": "6973-6975",
        },
    )
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)
    env = sluice_env(mariadb, postgresql)
    first = run_sluice(pipeline, tmp_path / "state", env)
    assert first.returncode == 0, first.stderr
    changes_while_nothing_runs(mariadb, source_db)
    again = run_sluice(pipeline, tmp_path / "fresh-state", env)
    assert again.returncode == 0, again.stderr
    assert "adopting the records of pipeline" in again.stderr, again.stderr
    assert "snapshot:" not in again.stderr.replace("snapshot: the target is a copy as of", ""), again.stderr
    for table, key in (("orders", "id"), ("notes", None)):
        replayed = compare.replay_changelog(read_changelog(lake, f"{source_db}.{table}"), key)
        assert replayed == compare.source_rows(mariadb, source_db, table), table
