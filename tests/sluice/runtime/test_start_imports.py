"""What a `sluice run` loads before its first change: every module it imports at start
is time before catching up (a restarted pipeline, a pod rescheduled). The expression parser
(sqlglot, a tenth of a second) is loaded by the pipelines that use it: transforms, DDL."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# The modules a run into a JDBC target imports before it reads the binlog.
RUN_MODULES = (
    "sluice.cli",
    "sluice.runtime.pipeline_runner",
    "sluice.runtime.binlog_streaming",
    "sluice.runtime.reader_process",
    "sluice.binlog.transaction_reader",
    "sluice.binlog.ddl.ddl_reader",
    "sluice.route.table_routing",
    "sluice.sink.jdbc.sink",
    "sluice.sink.jdbc.postgres",
)


def loaded_after(code: str) -> set[str]:
    script = textwrap.dedent(code) + "\nimport sys\nprint(' '.join(sys.modules))\n"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return set(run.stdout.split())


def definition(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            source:
              {type: mysql, hostname: db, port: 3306, username: cdc, password: "${SOURCE_PASSWORD}", tables: app.orders}
            sink: {type: jdbc, url: "postgresql://pg:5432/target", username: sluice, password: "${TARGET_PASSWORD}"}
            pipeline: {name: orders}
            """
        )
        + extra
    )
    return path


def test_a_run_without_transforms_starts_without_the_expression_parser(tmp_path: Path) -> None:
    path = definition(tmp_path)
    loaded = loaded_after(
        f"""
        import os
        os.environ.update(SOURCE_PASSWORD="s", TARGET_PASSWORD="t")
        {"; ".join(f"import {m}" for m in RUN_MODULES)}
        from sluice.pipeline.definition import load_definition
        from sluice.route.table_routing import TableRouting
        from sluice.source.schema import Column, TableSchema
        loaded = load_definition({str(path)!r})
        schema = TableSchema("app", "orders", (Column("id", "bigint", "bigint", False),), ("id",), "id")
        TableRouting(loaded.routing, {{"app.orders": schema}})
        """
    )
    assert "sqlglot" not in loaded


def test_a_transform_loads_the_expression_parser_when_the_definition_is_read(tmp_path: Path) -> None:
    path = definition(tmp_path, "transform:\n  - {source-table: app.orders, projection: 'id, id * 2 AS twice'}\n")
    loaded = loaded_after(
        f"""
        import os
        os.environ.update(SOURCE_PASSWORD="s", TARGET_PASSWORD="t")
        from sluice.pipeline.definition import load_definition
        load_definition({str(path)!r})
        """
    )
    assert "sqlglot" in loaded
