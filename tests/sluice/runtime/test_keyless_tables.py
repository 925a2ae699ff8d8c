"""Tables without a primary key keep their exact contents in every target: one with a
UNIQUE key over NOT NULL columns is keyed by it; one without is a bag, where equal rows are
kept apart, a delete removes one of them and an update changes one of them."""

from __future__ import annotations

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.pipelines import every_sink, pipeline_per_sink, sluice_env, stream_until_equal

TABLES = {"uniq": "code", "bag": None}  # table -> the key its parquet changelog replays by


def _both(rows_of) -> list[tuple]:
    return [(table, *row) for table in TABLES for row in rows_of(table)]


def test_keyless_tables_keep_their_rows_through_snapshot_and_binlog(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    mariadb.execute(
        "CREATE TABLE uniq (code VARCHAR(20) NOT NULL, v INT, note VARCHAR(20), UNIQUE KEY (code))",
        "INSERT INTO uniq VALUES " + ", ".join(f"('c{i:03d}', {i}, NULL)" for i in range(40)),
        "CREATE TABLE bag (a INT, b VARCHAR(10))",
        # Runs of equal rows longer than a chunk, across chunk boundaries, and NULL chunk keys.
        "INSERT INTO bag VALUES " + ", ".join(f"({i // 7}, 'x')" for i in range(40)) + ", (NULL, 'n'), (NULL, 'n')",
        database=source_db,
    )
    lake = tmp_path / "lake"
    sinks = every_sink(postgresql, mariadb_target, lake, 6980)
    pipelines = pipeline_per_sink(
        tmp_path,
        mariadb,
        f"{source_db}.(uniq|bag)",
        sinks,
        "keyless",
        **{
            "scan.incremental.snapshot.chunk.size": 5,
            "scan.incremental.snapshot.chunk.key-column": f"{source_db}.bag:a",
        },
    )

    def write() -> None:
        mariadb.execute(
            "UPDATE uniq SET v = v + 100 WHERE code IN ('c001', 'c017')",
            "UPDATE uniq SET code = 'moved' WHERE code = 'c002'",  # the key changes
            "DELETE FROM uniq WHERE code = 'c003'",
            "INSERT INTO uniq VALUES ('new', 7, 'n')",
            "DELETE FROM bag WHERE a = 1 LIMIT 1",  # one of seven equal rows
            "UPDATE bag SET b = 'y' WHERE a = 2 LIMIT 1",  # one of them changes
            "UPDATE bag SET a = 0 WHERE a = 4 LIMIT 2",  # two move to another chunk
            "INSERT INTO bag VALUES (3, 'x'), (3, 'x'), (NULL, 'n')",  # more equal rows
            "DELETE FROM bag WHERE a IS NULL LIMIT 2",
            "BEGIN",
            "INSERT INTO bag VALUES (9, 'z')",
            "DELETE FROM bag WHERE a = 9",  # in and out in one transaction
            "COMMIT",
            database=source_db,
        )

    stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        lambda: _both(lambda t: compare.source_rows(mariadb, source_db, t)),
        {
            "postgres": lambda: _both(lambda t: compare.postgres_rows(postgresql, source_db, t)),
            "mariadb": lambda: _both(lambda t: compare.source_rows(mariadb_target, source_db, t)),
            "parquet": lambda: _both(
                lambda t: compare.replay_changelog(read_changelog(lake, f"{source_db}.{t}"), key=TABLES[t])
            ),
        },
    )
    bag = compare.source_rows(mariadb, source_db, "bag")
    assert bag.count((1, "x")) == 6 and bag.count((0, "x")) == 9 and bag.count((None, "n")) == 1

    assert compare.postgres_primary_key(postgresql, source_db, "uniq") == ["code"]  # the unique key keys it


def test_keyless_tables_with_no_chunk_key_configured_are_captured_all_the_same(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """Nothing to configure: a keyless table is chunked by an indexed column it picks, or,
    where no column splits it (ENUM, FLOAT, TEXT), read as one split; the run says which."""
    mariadb.execute(
        "CREATE TABLE picked (grp INT NOT NULL, v VARCHAR(5), KEY (grp))",
        "INSERT INTO picked SELECT seq % 4, 'x' FROM seq_1_to_30",
        "CREATE TABLE whole (level ENUM('low', 'high'), amount FLOAT, note TEXT)",
        "INSERT INTO whole SELECT IF(seq % 2, 'low', 'high'), 1.5, 'same' FROM seq_1_to_30",
        database=source_db,
    )
    tables = ("picked", "whole")
    sinks = {n: sink for n, sink in every_sink(postgresql, mariadb_target, tmp_path, 7170).items() if n != "parquet"}
    pipelines = pipeline_per_sink(
        tmp_path, mariadb, f"{source_db}.(picked|whole)", sinks, "nokey", **{"scan.incremental.snapshot.chunk.size": 5}
    )

    def write() -> None:
        mariadb.execute(
            "DELETE FROM picked WHERE grp = 1 LIMIT 2",
            "UPDATE picked SET v = 'y' WHERE grp = 2 LIMIT 1",
            "INSERT INTO whole VALUES ('low', 1.5, 'same'), (NULL, NULL, NULL)",
            "DELETE FROM whole WHERE level = 'high' LIMIT 3",
            "UPDATE whole SET note = 'changed' WHERE level = 'low' LIMIT 1",
            database=source_db,
        )

    def rows(read) -> list[tuple]:
        return sorted((t, *map(str, row)) for t in tables for row in read(t))

    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        lambda: rows(lambda t: compare.source_rows(mariadb, source_db, t)),
        {
            "postgres": lambda: rows(lambda t: compare.postgres_rows(postgresql, source_db, t)),
            "mariadb": lambda: rows(lambda t: compare.source_rows(mariadb_target, source_db, t)),
        },
    )
    assert f"{source_db}.picked has no key: chunked by its indexed column grp" in said["postgres"]
    assert f"{source_db}.whole has no key and no indexed column that splits it: read as one split" in said["postgres"]


def test_tables_keyed_by_an_enum_or_a_bit_are_read_in_chunks_of_it(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    """An ENUM key chunks by its members' index, a BIT key by its value, as MySQL orders
    them; rows whose key moves to another chunk while the snapshot and binlog run stay exact."""
    mariadb.execute(
        "CREATE TABLE graded (grade ENUM('z', 'a', 'm') NOT NULL, n INT NOT NULL, v INT, PRIMARY KEY (grade, n))",
        "INSERT INTO graded SELECT ELT(1 + seq % 3, 'z', 'a', 'm'), seq, seq FROM seq_1_to_60",
        "CREATE TABLE flagged (f BIT(10) PRIMARY KEY, v INT)",
        "INSERT INTO flagged SELECT seq * 3, seq FROM seq_1_to_60",
        database=source_db,
    )
    tables = ("graded", "flagged")
    lake = tmp_path / "lake"
    pipelines = pipeline_per_sink(
        tmp_path,
        mariadb,
        f"{source_db}.(graded|flagged)",
        every_sink(postgresql, mariadb_target, lake, 7290),
        "numbered",
        **{"scan.incremental.snapshot.chunk.size": 8},
    )

    def write() -> None:
        mariadb.execute(
            "UPDATE graded SET grade = 'z' WHERE grade = 'm' AND n < 20",  # to another chunk
            "UPDATE graded SET v = -v WHERE grade = 'a'",
            "DELETE FROM graded WHERE n BETWEEN 30 AND 35",
            "INSERT INTO graded VALUES ('m', 100, 1), ('z', 101, 2)",
            "UPDATE flagged SET f = f + 1000 WHERE v < 5",  # past every chunk
            "DELETE FROM flagged WHERE v BETWEEN 20 AND 25",
            "INSERT INTO flagged VALUES (b'0', 0), (1, 1)",
            database=source_db,
        )

    def rows(read) -> list[tuple]:
        return sorted((t, *map(str, row)) for t in tables for row in read(t))

    mysql_columns = {"graded": "grade, n, v", "flagged": "f + 0, v"}  # a BIT as its number

    def mysql_rows(server, table: str) -> list[tuple]:
        return compare.source_rows(server, source_db, table, mysql_columns[table])

    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        write,
        lambda: rows(lambda t: mysql_rows(mariadb, t)),
        {
            "postgres": lambda: rows(lambda t: compare.postgres_rows(postgresql, source_db, t)),
            "mariadb": lambda: rows(lambda t: mysql_rows(mariadb_target, t)),
            "parquet": lambda: rows(lambda t: compare.replay_changelog(read_changelog(lake, f"{source_db}.{t}"), None)),
        },
    )
    assert "snapshot: 0/" in said["postgres"] and "/2 splits" not in said["postgres"], said["postgres"]
