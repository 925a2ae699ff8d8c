"""gh-ost and pt-online-schema-change migrate a captured table while it takes writes. With
scan.parse.online.schema.changes.enabled the migration is one schema change of the table,
applied at the cut-over: the target gets the ALTER once, never the shadow's row copy, and
reads nothing again. The target ends equal to the source, new column and all.

pt-online-schema-change is the real tool (Debian's percona-toolkit). gh-ost has no package
here: its statement sequence is replayed as its documentation and code give it (the
ghost and changelog tables, the chunked row copy, the applier's writes from the binlog,
the sentry table and the atomic cut-over rename), on the real MariaDB."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import threading
import time

from tests.harness import compare
from tests.harness.gh_ost import gh_ost_migration
from tests.harness.pipelines import (
    kill_pipeline,
    mysql_sink,
    pipeline_per_sink,
    postgres_sink,
    read_state,
    sluice_env,
    start_sluice,
    stream_until_equal,
    wait_until_in_binlog_phase,
    wait_until_target_is,
)
from tests.sluice.runtime.test_schema_evolution import mariadb_table, postgres_table

ROWS = 2000


def _pipelines(tmp_path, mariadb, postgresql, mariadb_target, source_db, prefix: str, first_id: int):
    sinks = {
        "postgres": (postgres_sink(postgresql), f"{first_id}-{first_id + 1}"),
        "mariadb": (mysql_sink(mariadb_target), f"{first_id + 2}-{first_id + 3}"),
    }
    options = {"schema.change.behavior": "evolve"}
    return pipeline_per_sink(
        tmp_path,
        mariadb,
        f"{source_db}.\\.*",  # the tools' own tables match too: the option leaves them out
        sinks,
        prefix,
        options,
        **{"scan.parse.online.schema.changes.enabled": True},
    )


def _table_to_migrate(mariadb, source_db) -> None:
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, {i})" for i in range(ROWS)),
        database=source_db,
    )


def _source(mariadb, source_db) -> dict:
    rows = compare.source_rows(mariadb, source_db, "t")
    return {"t": {r[0]: {"id": r[0], "v": r[1], "w": r[2]} for r in rows}}


def _targets(postgresql, mariadb_target, source_db) -> dict:
    return {
        "postgres": lambda: {"t": postgres_table(postgresql, source_db)("t")},
        "mariadb": lambda: {"t": mariadb_table(mariadb_target, source_db)("t")},
    }


def _binlog_rows(said: str) -> int:
    """The row changes the pipeline wrote in its binlog phase, as its last progress line says
    (an insert, an update or a delete is one)."""
    return int(re.findall(r"binlog: stopped at \S+, ([\d,]+) row changes", said)[-1].replace(",", ""))


def _applied_once(said: str) -> None:
    applied = re.findall(r"applied to the target: (.*)", said)
    assert len(applied) == 1 and "AddColumnEvent" in applied[0] and "`w` INT NOT NULL" in applied[0], said
    assert "read again" not in said and "_t_gho" not in applied[0] and "_t_new" not in applied[0], said


def test_a_gh_ost_migration_is_one_schema_change_at_its_cut_over(
    tmp_path, mariadb, postgresql, mariadb_target, source_db
):
    _table_to_migrate(mariadb, source_db)
    pipelines = _pipelines(tmp_path, mariadb, postgresql, mariadb_target, source_db, "gh-ost", 7460)
    statements, changes = gh_ost_migration(source_db, ROWS)
    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        lambda: mariadb.execute(*statements, database=source_db),
        lambda: _source(mariadb, source_db),
        _targets(postgresql, mariadb_target, source_db),
    )
    for name, text in said.items():
        _applied_once(text)
        # Every change made to t, and nothing of the shadow's copy or the applier's replay.
        assert _binlog_rows(text) == changes, f"{name}: {text}"


def pt_online_schema_change(mariadb, source_db: str) -> int:
    """The real pt-online-schema-change adds w to t while t takes writes (its triggers carry
    them into _t_new), then t takes more; the row changes t's own changes make."""
    writes = {"changes": 0}

    def write_during(stop: threading.Event) -> None:
        i = 0
        while not stop.is_set():
            mariadb.execute(f"UPDATE t SET v = v + 1 WHERE id = {i % ROWS}", database=source_db)
            writes["changes"] += 1
            i += 7
            time.sleep(0.01)

    stop = threading.Event()
    writer = threading.Thread(target=write_during, args=(stop,))
    writer.start()
    try:
        tool = subprocess.run(
            [
                "pt-online-schema-change",
                "--alter",
                "ADD COLUMN w INT NOT NULL DEFAULT 7",
                f"h={mariadb.host},P={mariadb.port},u={mariadb.user},D={source_db},t=t",
                "--execute",
                "--chunk-size",
                "200",
                "--recursion-method",
                "none",
                "--no-check-replication-filters",
            ],
            env={"PATH": "/usr/bin:/bin", "MYSQL_PWD": mariadb.password},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        stop.set()
        writer.join()
    assert tool.returncode == 0, tool.stdout + tool.stderr
    mariadb.execute("INSERT INTO t VALUES (9000, 9, 9)", "UPDATE t SET w = 8 WHERE id = 3", database=source_db)
    return writes["changes"] + 2


def test_a_pt_online_schema_change_migration_is_one_schema_change_at_its_cut_over(
    tmp_path, mariadb, postgresql, mariadb_target, source_db
):
    assert shutil.which("pt-online-schema-change"), "install Debian's percona-toolkit (make system-deps does)"
    _table_to_migrate(mariadb, source_db)
    pipelines = _pipelines(tmp_path, mariadb, postgresql, mariadb_target, source_db, "pt-osc", 7470)
    writes = {"changes": 0}

    def migrate() -> None:
        writes["changes"] += pt_online_schema_change(mariadb, source_db)

    said = stream_until_equal(
        pipelines,
        sluice_env(mariadb, postgresql, mariadb_target),
        migrate,
        lambda: _source(mariadb, source_db),
        _targets(postgresql, mariadb_target, source_db),
    )
    for name, text in said.items():
        _applied_once(text)
        assert _binlog_rows(text) == writes["changes"], f"{name}: {text}"


def _survives_sigkills(pipelines: dict, env: dict, migrate, seed: int) -> tuple[dict, float]:
    """Runs `migrate` while the pipelines are SIGKILLed again and again (at least three times,
    before its ALTER, during the copy, around the cut-over) and run again; the processes
    running after it, and the deadline they have to catch up by."""
    rng = random.Random(int(os.environ.get("SLUICE_SOAK_SEED", str(seed))))
    processes = {name: start_sluice(path, state, env) for name, (path, state) in pipelines.items()}
    deadline = time.monotonic() + 240
    try:
        for name, (_, state) in pipelines.items():
            wait_until_in_binlog_phase(processes[name], state, deadline)
        migration = threading.Thread(target=migrate, args=(rng,))
        migration.start()
        kills = 0
        while migration.is_alive() or kills < 3:
            time.sleep(rng.uniform(0.2, 1.0))
            name = rng.choice(sorted(processes))
            kill_pipeline(processes[name])
            processes[name] = start_sluice(*pipelines[name], env)
            kills += 1
        migration.join()
        return processes, deadline
    except BaseException:
        for process in processes.values():
            kill_pipeline(process)
        raise


def _equal_after_kills(processes: dict, deadline: float, want: dict, targets: dict) -> None:
    try:
        for name, rows in targets.items():
            wait_until_target_is(processes[name], want, rows, deadline, name)
    finally:
        for process in processes.values():
            kill_pipeline(process)


def test_a_gh_ost_migration_survives_sigkills_at_random_points(
    tmp_path, mariadb, postgresql, mariadb_target, source_db
):
    """The targets still end equal to the source, the ALTER applied once."""
    _table_to_migrate(mariadb, source_db)
    pipelines = _pipelines(tmp_path, mariadb, postgresql, mariadb_target, source_db, "gh-ost-kills", 7480)
    statements, _ = gh_ost_migration(source_db, ROWS)

    def migrate(rng: random.Random) -> None:
        for statement in statements:
            mariadb.execute(statement, database=source_db)
            time.sleep(rng.uniform(0, 0.05))

    env = sluice_env(mariadb, postgresql, mariadb_target)
    processes, deadline = _survives_sigkills(pipelines, env, migrate, 25)
    _equal_after_kills(
        processes, deadline, _source(mariadb, source_db), _targets(postgresql, mariadb_target, source_db)
    )
    for name, (_, state) in pipelines.items():
        history = read_state(state)["schema_change_history"]
        assert [h["statement"].split(";")[0] for h in history][-1:] == [statements[5]], (name, history)


def test_a_pt_online_schema_change_migration_survives_sigkills_at_random_points(
    tmp_path, mariadb, postgresql, mariadb_target, source_db
):
    """The real tool, killed pipelines: the targets end equal to the source, w added once."""
    _table_to_migrate(mariadb, source_db)
    pipelines = _pipelines(tmp_path, mariadb, postgresql, mariadb_target, source_db, "pt-osc-kills", 7490)
    env = sluice_env(mariadb, postgresql, mariadb_target)
    processes, deadline = _survives_sigkills(pipelines, env, lambda _: pt_online_schema_change(mariadb, source_db), 26)
    _equal_after_kills(
        processes, deadline, _source(mariadb, source_db), _targets(postgresql, mariadb_target, source_db)
    )
    for name, (_, state) in pipelines.items():
        history = read_state(state)["schema_change_history"]
        added = [h for h in history if any(e["type"] == "add.column" for e in h.get("events", []))]
        assert len(added) == 1 and "_t_new" in added[0]["statement"], (name, history)
