"""`sluice verify` compares a streaming pipeline's target with its source range by range,
exactly as of the position the target committed, while writes go on at the source: it
names exactly the ranges corrupted behind the pipeline's back (a row updated, a row
deleted, a row inserted, a bag's row duplicated) and no others, and `--repair` reads them
again without stopping the stream. `sluice resnapshot` reads whole tables again so."""

from __future__ import annotations

import collections
import contextlib
import io
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness import compare
from tests.harness.pipelines import (
    SLUICE,
    kill_pipeline,
    mysql_sink,
    pipeline_yaml,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    wait_until_target_is,
    write_pipeline,
)
from tests.harness.services import start_mariadb

pytestmark = pytest.mark.slow


def sluice(command: str, pipeline, env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SLUICE, command, str(pipeline), *args], env=env, capture_output=True, text=True, timeout=300
    )


class Target:
    """The target's rows and how to change them behind the pipeline's back."""

    def __init__(self, kind: str, postgresql, mariadb_target, db: str) -> None:
        self.kind, self.postgresql, self.mariadb_target, self.db = kind, postgresql, mariadb_target, db

    def sink(self) -> dict:
        return postgres_sink(self.postgresql) if self.kind == "postgres" else mysql_sink(self.mariadb_target)

    def rows(self) -> list[tuple]:
        if self.kind == "postgres":
            read = lambda t: compare.postgres_rows(self.postgresql, self.db, t)  # noqa: E731
        else:
            read = lambda t: compare.source_rows(self.mariadb_target, self.db, t)  # noqa: E731
        return sorted((t, *row) for t in ("orders", "notes") for row in read(t))

    def execute(self, *statements: str) -> None:
        if self.kind == "postgres":
            with self.postgresql.connect() as conn:
                for statement in statements:
                    conn.execute(statement)
        else:
            self.mariadb_target.execute(*statements)


def source_rows(mariadb, db: str) -> list[tuple]:
    return sorted((t, *row) for t in ("orders", "notes") for row in compare.source_rows(mariadb, db, t))


def wait_until_streaming(process, state: Path, write_past_watermarks: Callable[[], None]) -> None:  # noqa: ANN001
    """Until the pipeline streams with no snapshot watermarks left (verify compares at one
    position only then): once in the binlog phase, `write_past_watermarks` gives it a change
    past them, and the state drops them."""
    deadline = time.monotonic() + 180
    wait_until_in_binlog_phase(process, state, deadline)
    write_past_watermarks()
    while "snapshot" in read_state(state):  # kept in the target before the state directory
        assert time.monotonic() < deadline, "the pipeline kept its snapshot's watermarks"
        time.sleep(0.1)


@contextlib.contextmanager
def streaming_pipeline(tmp_path: Path, server, definition: dict, env: dict, past: str) -> Iterator[Path]:  # noqa: ANN001
    """The pipeline file of `definition`, its run streaming past its snapshot (`past`: a write
    at the source that takes it past the watermarks) until the block ends, then killed."""
    pipeline, state = write_pipeline(tmp_path / "p.yaml", definition), tmp_path / "s"
    process = start_sluice(pipeline, state, env)
    try:
        wait_until_streaming(process, state, lambda: server.execute(past))
        yield pipeline
    finally:
        kill_pipeline(process)


@pytest.fixture
def streaming(request, tmp_path, mariadb, postgresql, mariadb_target, source_db) -> Iterator[tuple]:
    """A pipeline streaming orders (3,000 rows, chunks of 200 ids) and the bag notes (600
    rows, authors 0-49 in chunks of 16) into the target, equal to the source: (pipeline
    file, environment, target, process). The target is PostgreSQL unless a test asks for
    another (indirect parametrization)."""
    kind = getattr(request, "param", "postgres")
    mariadb.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, total INT)",
        "INSERT INTO orders SELECT seq, seq FROM seq_1_to_3000",
        "CREATE TABLE notes (author INT, note VARCHAR(10))",
        "INSERT INTO notes SELECT seq % 50, 'same' FROM seq_1_to_600",
        database=source_db,
    )
    target = Target(kind, postgresql, mariadb_target, source_db)
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.(orders|notes)",
        target.sink(),
        name=f"verify-{kind}-{source_db}",
        **{
            "scan.incremental.snapshot.chunk.size": 200,
            "scan.incremental.snapshot.chunk.key-column": f"{source_db}.notes:author",
            "server-id": "6970-6972",
        },
    )
    pipeline = write_pipeline(tmp_path / "p.yaml", definition)
    env = sluice_env(mariadb, postgresql, mariadb_target)
    process = start_sluice(pipeline, tmp_path / "state", env)
    try:
        past = lambda: mariadb.execute("INSERT INTO orders VALUES (3001, 1)", database=source_db)  # noqa: E731
        wait_until_streaming(process, tmp_path / "state", past)
        wait_until_target_is(process, source_rows(mariadb, source_db), target.rows, time.monotonic() + 120)
        yield pipeline, env, target, process
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    finally:
        if process.poll() is None:
            kill_pipeline(process)


class SourceWrites:
    """Inserts, updates and deletes in the last chunks of both tables, until stopped."""

    def __init__(self, mariadb, db: str) -> None:
        self.mariadb, self.db = mariadb, db
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.count = 0

    def _write(self) -> None:
        conn = self.mariadb.connect(self.db)
        with conn.cursor() as cur:
            n = 10_000
            while not self.done.is_set():
                n += 1
                cur.execute("INSERT INTO orders VALUES (%s, 0)", (n,))
                cur.execute("UPDATE orders SET total = total + 1 WHERE id BETWEEN 2900 AND 2910")
                cur.execute("INSERT INTO notes VALUES (49, 'new'), (49, 'new')")
                cur.execute("DELETE FROM notes WHERE author = 49 LIMIT 1")
                if n % 5 == 0:
                    cur.execute("DELETE FROM orders WHERE id = %s", (n - 3,))
                self.count += 1
                time.sleep(0.005)
        conn.close()

    def __enter__(self) -> SourceWrites:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join(30)


def reported(output: str, kind: str) -> set[tuple[str, float, float]]:
    """The ranges a verify run reported as `kind`: (table, start, end)."""
    bound = lambda text: float(text.replace("inf", "Infinity"))  # noqa: E731
    found = re.findall(rf"^{kind}: (\S+) \[(\S+), (\S+)\):", output, re.MULTILINE)
    return {(table, bound(start), bound(end)) for table, start, end in found}


def holding_exactly(ranges: set[tuple[str, float, float]], keys: set[tuple[str, int]]) -> bool:
    """Whether every range holds one of the keys and every key is in one of the ranges."""
    holds = lambda r, k: r[0] == k[0] and r[1] <= k[1] < r[2]  # noqa: E731
    return all(any(holds(r, k) for k in keys) for r in ranges) and all(any(holds(r, k) for r in ranges) for k in keys)


@pytest.mark.parametrize("streaming", ["postgres", "mariadb"], indirect=True)
def test_verify_names_exactly_the_ranges_corrupted_behind_the_pipeline_and_repair_mends_them(
    streaming, mariadb, source_db
):
    pipeline, env, target, process = streaming
    mariadb.execute("DELETE FROM orders WHERE id = 1250", database=source_db)
    wait_until_target_is(process, source_rows(mariadb, source_db), target.rows, time.monotonic() + 60)
    target.execute(
        f"UPDATE {source_db}.orders SET total = -5 WHERE id = 150",
        f"DELETE FROM {source_db}.orders WHERE id = 650",
        f"INSERT INTO {source_db}.orders VALUES (1250, 1)",
        f"INSERT INTO {source_db}.notes VALUES (30, 'same')",
    )
    # The chunk key of each corrupted row (the verifier's ranges follow the source's keys).
    corrupted = {
        (f"{source_db}.orders", 150),
        (f"{source_db}.orders", 650),
        (f"{source_db}.orders", 1250),
        (f"{source_db}.notes", 30),
    }
    with SourceWrites(mariadb, source_db) as writes:
        found = sluice("verify", pipeline, env)
        assert found.returncode == 3, found.stderr
        mismatched = reported(found.stdout, "mismatch")
        assert holding_exactly(mismatched, corrupted), found.stdout
        assert re.search(rf"verify: (\d+)/\1 ranges checked, {len(mismatched)} mismatched", found.stderr), found.stderr

        repaired = sluice("verify", pipeline, env, "--repair")
        assert repaired.returncode == 0, repaired.stderr
        assert holding_exactly(reported(repaired.stdout, "repaired"), corrupted), repaired.stdout
        assert writes.count > 0 and process.poll() is None  # the stream went on throughout

        again = sluice("verify", pipeline, env)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "0 differ" in again.stdout
    wait_until_target_is(process, source_rows(mariadb, source_db), target.rows, time.monotonic() + 60)


def test_resnapshot_reads_a_table_again_while_the_pipeline_streams(streaming, mariadb, source_db):
    pipeline, env, target, process = streaming
    target.execute(f"DELETE FROM {source_db}.notes WHERE author < 20", f"UPDATE {source_db}.orders SET total = 0")
    with SourceWrites(mariadb, source_db):
        done = sluice("resnapshot", pipeline, env, "--table", f"{source_db}.notes", "--table", f"{source_db}.orders")
        assert done.returncode == 0, done.stderr
        assert f"resnapshot: {source_db}.orders read again" in done.stderr
    wait_until_target_is(process, source_rows(mariadb, source_db), target.rows, time.monotonic() + 60)


def test_verify_refuses_a_table_the_pipeline_does_not_capture(streaming, source_db):
    pipeline, env, _, _ = streaming
    refused = sluice("verify", pipeline, env, "--table", f"{source_db}.nothing")
    assert refused.returncode == 1
    assert f"--table: {source_db}.nothing not captured by pipeline" in refused.stderr


def test_resnapshot_reads_again_the_rows_matching_a_condition(streaming, mariadb, source_db):
    pipeline, env, target, process = streaming
    target.execute(
        f"UPDATE {source_db}.orders SET total = -1 WHERE id BETWEEN 100 AND 120",
        f"DELETE FROM {source_db}.orders WHERE id = 130",
    )
    with SourceWrites(mariadb, source_db):  # which updates rows 2900-2910 meanwhile
        done = sluice(
            "resnapshot",
            pipeline,
            env,
            "--table",
            f"{source_db}.orders",
            "--where",
            "id BETWEEN 100 AND 140 OR id BETWEEN 2900 AND 2905",
        )
        assert done.returncode == 0, done.stderr
        assert "47 rows matching 'id BETWEEN 100 AND 140 OR id BETWEEN 2900 AND 2905' read again" in done.stderr
    wait_until_target_is(process, source_rows(mariadb, source_db), target.rows, time.monotonic() + 60)
    refused = sluice("resnapshot", pipeline, env, "--table", f"{source_db}.notes", "--where", "author = 1")
    assert refused.returncode == 1
    assert f"{source_db}.notes has no key to find the rows matching 'author = 1' by" in refused.stderr


def test_a_keyless_tables_mismatch_shows_example_rows_by_their_values(streaming, source_db):
    """Issue 46, point 4: a keyed table's mismatch names keys; a keyless one had no example."""
    pipeline, env, target, _ = streaming
    target.execute(f"DELETE FROM {source_db}.notes WHERE author = 7")
    target.execute(f"INSERT INTO {source_db}.notes VALUES (7, 'planted')")
    found = sluice("verify", pipeline, env, "--table", f"{source_db}.notes")
    assert found.returncode == 3, found.stderr  # ranges differ
    line = next(line for line in found.stdout.splitlines() if line.startswith(f"mismatch: {source_db}.notes"))
    assert "12 source rows missing or different in the target, 1 target rows not at the source" in line
    assert "e.g. row (7, 'same') not in the target" in line and "row (7, 'planted') not at the source" in line


def test_resnapshot_checks_its_condition_against_every_table_before_it_reads_any(
    tmp_path, mariadb, postgresql, source_db
):
    """Issue 46, point 5: it read the first table again, then failed on the second (which
    lacks the condition's column)."""
    mariadb.execute(
        "CREATE TABLE a_orders (id INT PRIMARY KEY, total INT)",
        "INSERT INTO a_orders SELECT seq, seq FROM seq_1_to_50",
        "CREATE TABLE b_items (id INT PRIMARY KEY, price INT)",
        "INSERT INTO b_items SELECT seq, seq FROM seq_1_to_50",
        database=source_db,
    )
    definition = pipeline_yaml(
        mariadb, f"{source_db}.(a_orders|b_items)", postgres_sink(postgresql), **{"server-id": "6974-6975"}
    )
    env, past = sluice_env(mariadb, postgresql), f"INSERT INTO {source_db}.a_orders VALUES (51, 51)"
    with streaming_pipeline(tmp_path, mariadb, definition, env, past) as pipeline:
        tables = ("--table", f"{source_db}.a_orders", "--table", f"{source_db}.b_items")
        refused = sluice("resnapshot", pipeline, env, *tables, "--where", "total > 40")
        assert refused.returncode == 1
        assert f"{source_db}.b_items: the condition 'total > 40' failed at the source: Unknown column" in refused.stderr
        assert "read again" not in refused.stderr


def test_a_table_named_in_another_case_is_the_one_the_server_resolves_it_to(tmp_path, postgresql):
    """Issue 46, point 6: `--table VRPG.ORDERS` was "not captured" though a server with
    lower_case_table_names resolves it to vrpg.orders, as the pipeline does."""
    server = start_mariadb(tmp_path / "lower-case", server_id=3, options=["--lower-case-table-names=1"])
    try:
        server.execute("CREATE DATABASE vrpg", "CREATE TABLE vrpg.orders (id INT PRIMARY KEY, total INT)")
        server.execute("INSERT INTO vrpg.orders SELECT seq, seq FROM seq_1_to_30", database="vrpg")
        ids = {"server-id": "6976-6977"}
        sink, name = postgres_sink(postgresql), f"lower-case-{os.getpid()}"
        definition = pipeline_yaml(server, "vrpg.orders", sink, name=name, parallelism=1, **ids)
        env = sluice_env(server, postgresql)
        with streaming_pipeline(
            tmp_path, server, definition, env, "INSERT INTO vrpg.orders VALUES (31, 31)"
        ) as pipeline:
            found = sluice("verify", pipeline, env, "--table", "VRPG.ORDERS")
            assert found.returncode == 0, found.stdout + found.stderr
            assert "0 differ" in found.stdout
    finally:
        server.stop()


def mismatch_lines(output: str) -> dict[str, int]:
    """Each reported range (as printed) and the source rows it held."""
    found = re.findall(r"^mismatch: (\S+ \[.*?\)): .*?\((\d+) rows at the source", output, re.MULTILINE)
    return {named: int(rows) for named, rows in found}


def test_a_skewed_keys_ranges_hold_a_chunk_at_most_and_stay_put_to_be_checked_again(
    tmp_path, mariadb, postgresql, source_db
):
    """Issue 46, points 1 and 3: ids 1-6,000 then from 1,000,000 (an id jump) made one
    range of 6,000 rows at chunk size 500, whose repair replaced them all; and ranges were
    planned afresh from the row count each run, so a range a run named could not be named
    again."""
    mariadb.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, total INT)",
        "INSERT INTO orders SELECT seq, seq FROM seq_1_to_6000",
        "INSERT INTO orders SELECT seq, seq FROM seq_1000000_to_1001000",
        database=source_db,
    )
    options = {"server-id": "6978-6979", "scan.incremental.snapshot.chunk.size": 500}
    definition = pipeline_yaml(mariadb, f"{source_db}.orders", postgres_sink(postgresql), **options)
    env, past = sluice_env(mariadb, postgresql), f"INSERT INTO {source_db}.orders VALUES (1001001, 0)"
    with streaming_pipeline(tmp_path, mariadb, definition, env, past) as pipeline:
        planted = (100, 1700, 2900, 4100, 5300, 1000100)
        with postgresql.connect() as conn:
            conn.execute(f"UPDATE {source_db}.orders SET total = -1 WHERE id IN {planted}")
        found = sluice("verify", pipeline, env)
        assert found.returncode == 3, found.stderr
        named = mismatch_lines(found.stdout)
        assert len(named) == len(planted), found.stdout  # one range each: none holds two
        assert all(rows <= 500 for rows in named.values()), found.stdout

        # The table changes elsewhere (new ids, updates): the same ranges are named.
        mariadb.execute(
            "INSERT INTO orders SELECT seq, 0 FROM seq_1001002_to_1001100",
            "UPDATE orders SET total = total + 1 WHERE id BETWEEN 3000 AND 3010",
            database=source_db,
        )
        again = sluice("verify", pipeline, env)
        assert set(mismatch_lines(again.stdout)) == set(named), again.stdout

        first = sorted(named)[0]
        one = sluice("verify", pipeline, env, "--range", first)
        assert list(mismatch_lines(one.stdout)) == [first], one.stdout
        mended = sluice("verify", pipeline, env, "--range", first, "--repair")
        assert mended.returncode == 0, mended.stdout + mended.stderr
        assert f"repaired: {first}: " in mended.stdout
        assert sluice("verify", pipeline, env, "--range", first).returncode == 0
        assert len(mismatch_lines(sluice("verify", pipeline, env).stdout)) == len(planted) - 1


@pytest.mark.parametrize("kind", ["postgres", "mariadb"])
def test_an_email_keyed_table_is_verified_and_repaired_range_by_range_in_the_sources_collation(
    kind, tmp_path, mariadb, postgresql, mariadb_target, source_db
):
    """Issue 46, point 2: a key led by a string under a case-insensitive collation was one
    range for the whole table, and its repair rewrote the table while the pipeline waited."""
    mariadb.execute(
        "CREATE TABLE people (email VARCHAR(100) COLLATE utf8mb4_unicode_ci PRIMARY KEY, visits INT)",
        "INSERT INTO people SELECT CONCAT(IF(seq % 2, 'User', 'user'), seq, '@example.com'), seq FROM seq_1_to_3000",
        "INSERT INTO people SELECT CONCAT('Émile', seq, '@example.com'), seq FROM seq_1_to_300",
        database=source_db,
    )
    target = Target(kind, postgresql, mariadb_target, source_db)
    options = {"server-id": "6980-6981", "scan.incremental.snapshot.chunk.size": 400}
    definition = pipeline_yaml(
        mariadb, f"{source_db}.people", target.sink(), name=f"email-{kind}-{source_db}", **options
    )
    env = sluice_env(mariadb, postgresql, mariadb_target)
    past = f"INSERT INTO {source_db}.people VALUES ('new@example.com', 0)"
    with streaming_pipeline(tmp_path, mariadb, definition, env, past) as pipeline:
        table = f"{source_db}.people"
        target.execute(
            f"UPDATE {table} SET visits = -1 WHERE email = 'user100@example.com'",  # a value changed
            f"DELETE FROM {table} WHERE email = 'Émile7@example.com'",  # a row lost
            f"INSERT INTO {table} VALUES ('zz-planted@example.com', 1)",  # a row the source never had
            f"UPDATE {table} SET email = 'USER2001@example.com' WHERE email = 'User2001@example.com'",  # its case
        )
        found = sluice("verify", pipeline, env)
        assert found.returncode == 3, found.stderr
        named = mismatch_lines(found.stdout)
        assert len(named) == 4 and all(rows <= 400 for rows in named.values()), found.stdout
        assert "(whole table)" not in found.stdout

        repaired = sluice("verify", pipeline, env, "--repair")
        assert repaired.returncode == 0, repaired.stdout + repaired.stderr
        assert len(re.findall(r"^repaired: ", repaired.stdout, re.MULTILINE)) == 4, repaired.stdout
        again = sluice("verify", pipeline, env, "--range", sorted(named)[0])
        assert again.returncode == 0 and "1 ranges checked, 0 differ" in again.stdout, again.stdout
        assert sluice("verify", pipeline, env).returncode == 0


def test_a_verify_reads_each_side_on_one_connection(streaming, mariadb, source_db, monkeypatch):
    """Issue 46, point 6: verify opened new source, target and binlog connections for every
    range. The binlog since the target's position (it lags while the source writes) is
    read on one stream that only moves forward, and every range still compares equal."""
    from sluice.binlog.rows import event_reader
    from sluice.pipeline.definition import load_definition
    from sluice.sink.factory import create_sink
    from sluice.verify import forward_windows
    from sluice.verify import verifier as verifier_module

    pipeline, env, _, process = streaming
    definition = load_definition(pipeline, env=env)
    sink = create_sink(definition)
    opened: collections.Counter[str] = collections.Counter()

    def counted(owner: object, name: str, side: str) -> None:
        real = getattr(owner, name)

        def opening(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            opened[side] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, opening)

    counted(verifier_module, "connect", "source")
    counted(verifier_module, "connect_scan", "source scan")
    counted(event_reader, "open_stream", "binlog")  # any window read outside ForwardWindows
    counted(forward_windows, "open_stream", "binlog")
    counted(forward_windows.ForwardWindows, "window", "binlog windows read")
    counted(sink.target, "connect", "target")
    os.kill(process.pid, signal.SIGSTOP)  # the target lags the source's reads, however fast the pipeline
    try:
        with (
            SourceWrites(mariadb, source_db),
            verifier_module.Verifier(definition, sink, definition.source.endpoint(), out=io.StringIO()) as verifier,
        ):
            result = verifier.verify(verifier.tables())
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert result.equal and result.checked > 10, result
    assert opened["binlog windows read"] > 1
    assert opened == {
        "source": 1,
        "source scan": 1,
        "binlog": 1,
        "binlog windows read": opened["binlog windows read"],
        "target": 2,  # its records, then every range
    }
