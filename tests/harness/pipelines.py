"""Writes pipeline YAML for the harness's servers and runs `sluice run` as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.harness.services import MariaDB, PostgreSQL

SLUICE = [sys.executable, "-m", "sluice.cli"]


def pipeline_yaml(
    mariadb: MariaDB,
    tables: str,
    sink: dict[str, Any],
    name: str = "test",
    parallelism: int = 2,
    **source_options: Any,
) -> dict[str, Any]:
    source = {
        "type": "mysql",
        "hostname": mariadb.host,
        "port": mariadb.port,
        "username": mariadb.user,
        "password": "${SOURCE_PASSWORD}",
        "tables": tables,
        "server-id": "6400-6410",
        **source_options,
    }
    return {"source": source, "sink": sink, "pipeline": {"name": name, "parallelism": parallelism}}


def postgres_sink(postgresql: PostgreSQL) -> dict[str, Any]:
    return {"type": "jdbc", "url": postgresql.url, "username": postgresql.user, "password": "${TARGET_PASSWORD}"}


def mysql_sink(target: MariaDB) -> dict[str, Any]:
    return {
        "type": "jdbc",
        "url": f"mysql://{target.host}:{target.port}/mysql",
        "username": target.user,
        "password": "${TARGET_MYSQL_PASSWORD}",
    }


def write_pipeline(path: Path, definition: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(definition, sort_keys=False))
    return path


def sluice_env(mariadb: MariaDB, postgresql: PostgreSQL | None = None, target: MariaDB | None = None) -> dict[str, str]:
    env = dict(os.environ, SOURCE_PASSWORD=mariadb.password)
    if postgresql is not None:
        env["TARGET_PASSWORD"] = postgresql.password
    if target is not None:
        env["TARGET_MYSQL_PASSWORD"] = target.password
    return env


def run_sluice(
    pipeline: Path, state_dir: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SLUICE, "run", str(pipeline), "--state-dir", str(state_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_sluice(pipeline: Path, state_dir: Path, env: dict[str, str]) -> subprocess.Popen:
    """Starts `sluice run` in its own process group, so a SIGKILL takes its Spark JVM too."""
    return subprocess.Popen(
        [*SLUICE, "run", str(pipeline), "--state-dir", str(state_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
