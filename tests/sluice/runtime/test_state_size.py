"""Once every table is in pure binlog phase, state depends on the tables, not the splits:
per-split records leave the state directory and the target's offsets table."""

from __future__ import annotations

import json

from tests.harness.pipelines import pipeline_yaml, postgres_sink, run_sluice, sluice_env, write_pipeline
from tests.harness.workload import create_table


def test_state_size_does_not_grow_with_the_number_of_splits(tmp_path, mariadb, postgresql, source_db):
    create_table(mariadb, source_db, "events", 6_000, seed=5)
    env = sluice_env(mariadb, postgresql)
    sizes, splits = {}, {}
    for chunk, server_ids in ((3_000, "6700-6701"), (100, "6702-6703")):
        definition = pipeline_yaml(
            mariadb,
            f"{source_db}.events",
            postgres_sink(postgresql),
            name=f"state-{chunk}",
            **{"scan.startup.mode": "snapshot", "scan.incremental.snapshot.chunk.size": chunk, "server-id": server_ids},
        )
        state_dir = tmp_path / f"state-{chunk}"
        result = run_sluice(write_pipeline(tmp_path / f"{chunk}.yaml", definition), state_dir, env)
        assert result.returncode == 0, result.stderr
        state = json.loads((state_dir / "state.json").read_text())
        assert "snapshot" not in state and state["binlog"]["watermarks"] == {}, "pure binlog phase"
        splits[chunk] = state["snapshot_summary"]["splits"]
        sizes[chunk] = len(json.dumps({k: v for k, v in state.items() if k != "snapshot_summary"}))
        with postgresql.connect() as conn:
            records = conn.execute(
                "SELECT split_id FROM sluice_meta.offsets WHERE pipeline = %s", (f"state-{chunk}",)
            ).fetchall()
        assert records == [("binlog",)], "the target keeps only the binlog position"

    assert splits[100] >= 20 * splits[3_000]
    assert abs(sizes[100] - sizes[3_000]) <= 16, sizes  # the binlog position's digits may differ
