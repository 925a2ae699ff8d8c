"""Writes pipeline YAML for the harness's servers and runs `sluice run` as a real process."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from sluice.state.state_store import STATE_FILE, DirectoryStateStore
from tests.harness.compare import diff
from tests.harness.services import MariaDB, PostgreSQL

SLUICE = [sys.executable, "-m", "sluice.cli"]
_PIPELINE_NAMES = itertools.count()


def pipeline_yaml(
    mariadb: MariaDB,
    tables: str,
    sink: dict[str, Any],
    name: str | None = None,
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
    # Each pipeline its own name by default: targets keep offsets per pipeline name, and a
    # name another test used would resume from that test's position.
    name = name or f"test-{os.getpid()}-{next(_PIPELINE_NAMES)}"
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


def every_sink(
    postgresql: PostgreSQL, target: MariaDB, lake: Path, first_server_id: int, ids_each: int = 2
) -> dict[str, tuple[dict[str, Any], str]]:
    """A PostgreSQL, a MariaDB and a parquet sink, each with a server-id range of its own
    from `first_server_id` (for pipeline_per_sink)."""

    def ids(i: int) -> str:
        start = first_server_id + i * ids_each
        return f"{start}-{start + ids_each - 1}"

    return {
        "postgres": (postgres_sink(postgresql), ids(0)),
        "mariadb": (mysql_sink(target), ids(1)),
        "parquet": ({"type": "parquet", "path": str(lake)}, ids(2)),
    }


def write_pipeline(path: Path, definition: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(definition, sort_keys=False))
    return path


def pipeline_per_sink(
    directory: Path,
    mariadb: MariaDB,
    tables: str,
    sinks: dict[str, tuple[dict[str, Any], str]],
    prefix: str,
    pipeline_options: dict[str, Any] | None = None,
    **source_options: Any,
) -> dict[str, tuple[Path, Path]]:
    """One pipeline over `tables` per named (sink, server-id range): its YAML and state directory."""
    pipelines = {}
    for name, (sink, server_ids) in sinks.items():
        definition = pipeline_yaml(
            mariadb, tables, sink, name=f"{prefix}-{name}", **source_options, **{"server-id": server_ids}
        )
        definition["pipeline"].update(pipeline_options or {})
        pipelines[name] = (write_pipeline(directory / f"{name}.yaml", definition), directory / f"state-{name}")
    return pipelines


def sluice_env(mariadb: MariaDB, postgresql: PostgreSQL | None = None, target: MariaDB | None = None) -> dict[str, str]:
    env = dict(os.environ, SOURCE_PASSWORD=mariadb.password)
    if postgresql is not None:
        env["TARGET_PASSWORD"] = postgresql.password
    if target is not None:
        env["TARGET_MYSQL_PASSWORD"] = target.password
    return env


def run_sluice(
    pipeline: Path, state_dir: Path, env: dict[str, str], timeout: float = 600, options: Sequence[str] = ()
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*SLUICE, "run", str(pipeline), "--state-dir", str(state_dir), *options],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


PIPE_BYTES = 1 << 20  # Linux's default most for a process without CAP_SYS_RESOURCE
# Every run start_sluice started: a test that fails before it kills its runs leaves them to
# kill_leftover_pipelines, or they would write into the next test's databases.
_started: list[subprocess.Popen] = []


def start_sluice(pipeline: Path, state_dir: Path, env: dict[str, str], *options: str) -> subprocess.Popen:
    """Starts `sluice run` in its own session; kill_pipeline takes it down with everything it started.

    Its output is read when the test ends it, so its pipes hold a megabyte each: with the
    default 64 KB, a long run (a soak's backlog of schema changes, three lines each) stalled
    writing to stderr while the test waited for it to catch up."""
    process = subprocess.Popen(
        [*SLUICE, "run", str(pipeline), "--state-dir", str(state_dir), *options],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    for pipe in (process.stdout, process.stderr):
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    _started.append(process)
    return process


def kill_leftover_pipelines() -> list[int]:
    """Kills the runs start_sluice started that are still going; their pids."""
    leftover = [process for process in _started if process.poll() is None]
    for process in leftover:
        kill_pipeline(process)
    _started.clear()
    return [process.pid for process in leftover]


def read_state(state_dir: Path) -> dict[str, Any]:
    """A run's state as the run itself would load it (its journal included); {} before the
    first save."""
    if not (state_dir / STATE_FILE).exists():
        return {}
    return DirectoryStateStore(state_dir).load_document() or {}


def wait_until_in_binlog_phase(process: subprocess.Popen, state_dir: Path, deadline: float) -> None:
    """Waits until the run's state has a binlog split: the snapshot is done and it reads the
    binlog (or is about to: its signal handlers may not be in place before)."""
    while "binlog" not in read_state(state_dir):
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"{state_dir}: the run did not reach the binlog phase"
        time.sleep(0.05)


def kill_pipeline(process: subprocess.Popen) -> None:
    """SIGKILLs the run and every process under it at once, as losing its pod would.

    Killing the process group is not enough: PySpark's worker daemon moves into a group of
    its own, and a worker left running could still commit a split after the kill.
    """
    victims = {process.pid, *_descendants(process.pid)}
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait()
    for pid in victims:  # orphans are reaped by init; wait until they are gone
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.01)


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    pending = [root]
    while pending:
        for child in children.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def wait_until_target_is(
    process: subprocess.Popen, want: Any, rows: Callable[[], Any], deadline: float, name: str = "target"
) -> None:
    """Waits until `rows()` equals `want` while the run keeps running (its stderr if it ends)."""
    while (actual := rows()) != want:
        assert process.poll() is None, f"{name}: {process.communicate()[1]}"
        differs = diff(want, actual) if isinstance(want, list) and actual is not None else f"{actual} != {want}"
        assert time.monotonic() < deadline, f"{name}: {differs}"
        time.sleep(0.2)


def stream_until_equal(
    pipelines: dict[str, tuple[Path, Path]],
    env: dict[str, str],
    write: Callable[[], None],
    expected: Callable[[], Any] | Mapping[str, Callable[[], Any]],
    targets: dict[str, Callable[[], Any]],
    timeout: float = 240,
) -> dict[str, str]:
    """Starts every pipeline, calls `write` once all of them stream, waits until each
    pipeline's target (same name) reads equal to `expected()` (rows, or any value that
    describes the target; by name, where pipelines capture different tables), then stops
    them with SIGTERM, checks they exit 0, and returns what each said (stderr)."""
    processes = {name: start_sluice(path, state, env) for name, (path, state) in pipelines.items()}
    try:
        deadline = time.monotonic() + timeout
        for name, (_, state) in pipelines.items():
            wait_until_in_binlog_phase(processes[name], state, deadline)
        write()
        wants = {name: want() for name, want in expected.items()} if isinstance(expected, Mapping) else {}
        want = None if wants else expected()  # type: ignore[operator]
        for name, rows in targets.items():
            wait_until_target_is(processes[name], wants.get(name, want), rows, deadline, name)
        said = {}
        for name, process in processes.items():
            process.send_signal(signal.SIGTERM)
            _, said[name] = process.communicate(timeout=60)
            assert process.returncode == 0, f"{name}: {said[name]}"
        return said
    finally:
        for process in processes.values():
            if process.poll() is None:
                kill_pipeline(process)


TROUBLESHOOTING = (Path(__file__).parents[2] / "docs" / "troubleshooting.md").read_text()


def exit_message(stderr: str) -> str:
    """The CLI's exit line, without the link to the troubleshooting entry every error line
    ends with (checked: the page has the entry it names)."""
    line = stderr.strip().splitlines()[-1]
    found = re.fullmatch(r"(.*) \(see docs/troubleshooting\.md(?:#([a-z-]+))?\)", line)
    assert found is not None, f"no troubleshooting link: {line}"
    assert not found[2] or f"{{#{found[2]}}}" in TROUBLESHOOTING, f"no entry {found[2]} in docs/troubleshooting.md"
    return found[1]
