"""Session fixtures: one real MariaDB and one real PostgreSQL for the whole test run."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.kube_api_double import RunningApiDouble
from tests.harness.pipelines import kill_leftover_pipelines
from tests.harness.services import MariaDB, PostgreSQL, scratch_directory, start_mariadb, start_postgresql

_names = itertools.count()


@pytest.fixture(scope="session")
def services_dir() -> Iterator[Path]:
    path = scratch_directory("sluice-test-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def mariadb(services_dir: Path) -> Iterator[MariaDB]:
    server = start_mariadb(services_dir / "source")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mariadb_target(services_dir: Path) -> Iterator[MariaDB]:
    """A second MariaDB: the MySQL-dialect target (targets name databases like the source)."""
    server = start_mariadb(services_dir / "mysql-target", server_id=2)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgresql(services_dir: Path) -> Iterator[PostgreSQL]:
    server = start_postgresql(services_dir / "target")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kube_api(services_dir: Path) -> Iterator[RunningApiDouble]:
    """The Kubernetes API test double, serving the CdcPipeline and SparkApplication CRDs."""
    repo = Path(__file__).parents[1]
    directory = services_dir / "kube"
    directory.mkdir()
    double = RunningApiDouble(directory).start()
    double.apply_file(repo / "crds" / "cdcpipelines.sluice.io.yaml")
    double.apply_file(repo.parent / "shared" / "reference" / "sparkoperator.k8s.io_sparkapplications.yaml")
    yield double
    double.stop()


def _fresh_database(server: MariaDB) -> Iterator[str]:
    name = f"src_{os.getpid()}_{next(_names)}"
    server.execute(f"CREATE DATABASE {name}")
    yield name
    server.execute(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def source_db(mariadb: MariaDB) -> Iterator[str]:
    """A fresh, empty source database for one test."""
    yield from _fresh_database(mariadb)


@pytest.fixture(scope="session")
def mariadb_compressed(services_dir: Path) -> Iterator[MariaDB]:
    """A MariaDB that compresses its binlog, as large estates run it: every event of 10
    bytes or more (the least it takes; the default, 256, leaves small events plain)."""
    server = start_mariadb(
        services_dir / "compressed", server_id=3, options=("--log-bin-compress=ON", "--log-bin-compress-min-len=10")
    )
    yield server
    server.stop()


@pytest.fixture
def source_db_compressed(mariadb_compressed: MariaDB) -> Iterator[str]:
    """A fresh, empty database on the compressing MariaDB for one test."""
    yield from _fresh_database(mariadb_compressed)


@pytest.fixture(autouse=True)
def no_pipeline_outlives_its_test() -> Iterator[None]:
    """A test that failed before it ended its `sluice run`s: they die with it."""
    yield
    kill_leftover_pipelines()
