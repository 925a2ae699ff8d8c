"""A TIMESTAMP is an instant and reaches every target as the same instant, whatever
`source.server-time-zone` says and whatever zone the server runs in; a DATETIME is
wall-clock text and stays as written. Java ZoneId forms are accepted without the server's
time-zone tables."""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone

import pytest

from sluice.sink.parquet import read_changelog
from tests.harness import compare
from tests.harness.pipelines import every_sink, pipeline_per_sink, sluice_env, stream_until_equal

# Instants as epoch seconds: a summer noon with milliseconds; both 02:30 of the hour
# Europe/Berlin repeats when DST ends (2024-10-27); the hour it skips in spring; the range's edges.
SUMMER = datetime(2024, 6, 1, 12, 0, 0, 123000, tzinfo=timezone.utc).timestamp()
REPEATED_HOUR = [datetime(2024, 10, 27, h, 30, tzinfo=timezone.utc).timestamp() for h in (0, 1)]
SKIPPED_HOUR = datetime(2024, 3, 31, 1, 30, tzinfo=timezone.utc).timestamp()
INSTANTS = [SUMMER, *REPEATED_HOUR, SKIPPED_HOUR, 1.0, 2147483647.999]

# A zone form as the pipeline says it, and the offset the server itself runs in then
# (None: the server stays in its own zone; a region needs its time-zone tables there).
ZONE_FORMS = {"UTC+8": "+08:00", "Europe/Berlin": None, "-5": "-05:00"}


def _insert(conn, first_id: int) -> None:
    """Rows written as an application in the server's zone writes them: TIMESTAMPs from
    instants, DATETIMEs as wall-clock text."""
    with conn.cursor() as cur:
        for i, instant in enumerate(INSTANTS):
            cur.execute(  # the instant as a decimal literal: a float would lose the milliseconds
                f"INSERT INTO stamps VALUES (%s, FROM_UNIXTIME({instant:.3f}), %s)",
                (first_id + i, f"2024-10-27 02:{i:02d}:00.5"),
            )


@pytest.mark.parametrize("zone", list(ZONE_FORMS))
def test_timestamps_reach_every_target_as_the_same_instant(
    zone, tmp_path, mariadb, mariadb_target, postgresql, source_db
):
    server_zone = ZONE_FORMS[zone]
    with mariadb.global_setting("time_zone", server_zone) if server_zone else contextlib.nullcontext():
        mariadb.execute(
            "CREATE TABLE stamps (id INT PRIMARY KEY, ts TIMESTAMP(3) NULL, dt DATETIME(3) NULL)", database=source_db
        )
        conn = mariadb.connect(source_db)
        _insert(conn, 0)  # read by the snapshot
        lake = tmp_path / "lake"
        sinks = every_sink(postgresql, mariadb_target, lake, 6970)
        pipelines = pipeline_per_sink(
            tmp_path, mariadb, f"{source_db}.stamps", sinks, "zones", **{"server-time-zone": zone}
        )

        def write() -> None:  # read from the binlog
            _insert(conn, 100)
            with conn.cursor() as cur:
                cur.execute(f"UPDATE stamps SET ts = FROM_UNIXTIME({REPEATED_HOUR[1]:.0f}) WHERE id = 0")

        stream_until_equal(
            pipelines,
            sluice_env(mariadb, postgresql, mariadb_target),
            write,
            lambda: compare.source_rows(mariadb, source_db, "stamps"),
            {
                "postgres": lambda: compare.postgres_rows(postgresql, source_db, "stamps"),
                "mariadb": lambda: compare.source_rows(mariadb_target, source_db, "stamps"),
                "parquet": lambda: compare.replay_changelog(read_changelog(lake, f"{source_db}.stamps"), key="id"),
            },
        )
        conn.close()
    # Every side is read in UTC: check that the comparison saw the instants themselves.
    rows = {row[0]: row[1:] for row in compare.source_rows(mariadb, source_db, "stamps")}
    assert rows[0][0] == datetime(2024, 10, 27, 1, 30)
    assert rows[1] == (datetime(2024, 10, 27, 0, 30), datetime(2024, 10, 27, 2, 1, 0, 500000))
    assert rows[100][0] == datetime(2024, 6, 1, 12, 0, 0, 123000)
