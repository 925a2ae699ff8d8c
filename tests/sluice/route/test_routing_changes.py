"""Route and transform rules on a pipeline that has run: a change that keeps every captured
table's target and transform (a rule for tables not captured yet, a description) is taken;
one that would put a table's rows elsewhere, or change its query, is refused naming it."""

from __future__ import annotations

from tests.harness.pipelines import pipeline_yaml, postgres_sink, run_sluice, sluice_env, write_pipeline


def test_changes_that_keep_every_captured_tables_query_are_taken_and_others_refused(
    tmp_path, mariadb, postgresql, source_db
):
    mariadb.execute(
        "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(20))",
        "INSERT INTO users VALUES (1, 'ann'), (2, 'bob')",
        database=source_db,
    )
    definition = pipeline_yaml(
        mariadb,
        f"{source_db}.users",
        postgres_sink(postgresql),
        **{"server-id": "7320", "scan.startup.mode": "snapshot"},
    )
    definition["pipeline"]["parallelism"] = 1
    definition["route"] = [{"source-table": f"{source_db}.users", "sink-table": f"{source_db}.app_users"}]
    definition["transform"] = [{"source-table": f"{source_db}.users", "projection": "id, UPPER(name) AS name"}]
    path, state, env = tmp_path / "p.yaml", tmp_path / "state", sluice_env(mariadb, postgresql)

    def run(changed: dict) -> tuple[int, str]:
        ran = run_sluice(write_pipeline(path, changed), state, env)
        return ran.returncode, ran.stderr

    assert run(definition)[0] == 0

    more = {
        **definition,
        "route": [
            {**definition["route"][0], "description": "now described"},
            {"source-table": f"{source_db}.orders_\\.*", "sink-table": f"{source_db}.orders"},  # none captured yet
        ],
    }
    code, said = run(more)
    assert code == 0, said

    moved = {**more, "route": [{"source-table": f"{source_db}.users", "sink-table": f"{source_db}.people"}]}
    code, said = run(moved)
    assert code != 0
    assert f"route/transform: {source_db}.users goes to {source_db}.people, not {source_db}.app_users" in said

    filtered = {**more, "transform": [{**definition["transform"][0], "filter": "id > 1"}]}
    code, said = run(filtered)
    assert code != 0
    assert f"{source_db}.users is transformed by transform[0] (id, UPPER(name) AS name; filter id > 1)" in said
