"""Values MySQL holds that a target's type cannot never stop the pipeline without a
decision: each has a documented rule, and a warning names table, column and key once per
column. A MySQL-dialect target holds them exactly as the source."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness import compare
from tests.harness.pipelines import SLUICE, every_sink, pipeline_per_sink, sluice_env, stream_until_equal

pytestmark = pytest.mark.slow


def verify_holds_each_target_to_the_rule(pipelines: dict, env: dict[str, str]) -> None:
    """`sluice verify` finds each target equal to the source under the values' rules."""
    for name, (pipeline, _) in pipelines.items():
        checked = subprocess.run(
            [*SLUICE, "verify", str(pipeline)], env=env, capture_output=True, text=True, timeout=120
        )
        assert checked.returncode == 0, f"{name}: {checked.stdout}{checked.stderr}"


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
    assert f"values changed to fit the target (the warnings say how): {source_db}.notes.body 2, " in said["postgres"]
    verify_holds_each_target_to_the_rule(pipelines, sluice_env(mariadb, postgresql, mariadb_target))


# MariaDB keeps UTF-16 surrogates in its UTF-8 and UCS-2 columns (a legacy client's CESU-8,
# which encodes a character beyond the BMP as two of them, or a lone one): a code point
# neither PostgreSQL's text nor any UTF-8 holds.
CESU_EMOJI = "EDA0BDEDB880"  # U+1F600 as the surrogate pair D83D DE00, each in UTF-8's form
LONE_SURROGATE_UTF8 = "EDA080"  # U+D800
LONE_SURROGATE_UCS2 = "D800"


def test_surrogates_become_the_character_they_pair_into_or_u_fffd_for_postgresql_and_stay_for_mariadb(
    tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    def row(key: int, mb3: str, ucs2: str, mb4: str) -> str:
        return f"({key}, _binary 0x{mb3}, _ucs2 0x{ucs2}, _binary 0x{mb4})"

    legacy = "SET SESSION sql_mode = ''"  # as a legacy client writes
    mariadb.execute(
        "CREATE TABLE cesu (id INT PRIMARY KEY, m3 VARCHAR(20) CHARACTER SET utf8mb3, "
        "u2 VARCHAR(10) CHARACTER SET ucs2, m4 TEXT CHARACTER SET utf8mb4)",
        legacy,
        "INSERT INTO cesu VALUES "
        + row(1, f"61{CESU_EMOJI}62", f"0041{LONE_SURROGATE_UCS2}0042", f"41{LONE_SURROGATE_UTF8}42")
        + ", (2, 'plain', 'plain', 'plain')",
        database=source_db,
    )
    sinks = {
        name: sink for name, sink in every_sink(postgresql, mariadb_target, tmp_path, 7170).items() if name != "parquet"
    }
    pipelines = pipeline_per_sink(tmp_path, mariadb, f"{source_db}.cesu", sinks, "cesu", {"parallelism": 1})

    def binlog_rows() -> None:
        mariadb.execute(
            legacy,
            "INSERT INTO cesu VALUES " + row(3, CESU_EMOJI, LONE_SURROGATE_UCS2, CESU_EMOJI),
            f"UPDATE cesu SET m4 = _binary 0x{LONE_SURROGATE_UTF8} WHERE id = 2",
            database=source_db,
        )

    # The code points as bytes of one set: the target's columns are in its default set.
    as_bytes = "id, HEX(CONVERT(m3 USING utf8mb4)), HEX(CONVERT(u2 USING utf8mb4)), HEX(m4)"
    source = lambda: compare.source_rows(mariadb, source_db, "cesu", as_bytes)  # noqa: E731
    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        binlog_rows,
        {
            "postgres": lambda: [
                (1, "a\U0001f600b", "A\ufffdB", "A\ufffdB"),
                (2, "plain", "plain", "\ufffd"),
                (3, "\U0001f600", "\ufffd", "\U0001f600"),
            ],
            "mariadb": source,
        },
        {
            "postgres": lambda: compare.postgres_rows(postgresql, source_db, "cesu"),
            "mariadb": lambda: compare.source_rows(mariadb_target, source_db, "cesu", as_bytes),
        },
    )
    warnings = [line for line in said["postgres"].splitlines() if "surrogate" in line]
    assert len(warnings) == 3, said["postgres"]  # once per column
    assert any(f"{source_db}.cesu.m3" in w and "id=1" in w for w in warnings), warnings
    assert f"{source_db}.cesu.m4 3" in said["postgres"]  # the values changed, per column
    assert not any("surrogate" in line for line in said["mariadb"].splitlines())
    verify_holds_each_target_to_the_rule(pipelines, sluice_env(mariadb, postgresql, mariadb_target))
