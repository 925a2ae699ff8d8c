"""Session fixtures: one real MariaDB and one real PostgreSQL for the whole test run."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.kube_api_double import RunningApiDouble
from tests.harness.mysql84.front import Mysql84Front, mysql84_front
from tests.harness.pipelines import kill_leftover_pipelines
from tests.harness.services import MariaDB, PostgreSQL, scratch_directory, start_mariadb, start_postgresql
from tests.harness.tls import Certificates, make_certificates, postgres_options

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


@pytest.fixture
def mysql84(mariadb: MariaDB) -> Iterator[Mysql84Front]:
    """The MySQL 8.4 stand-in in front of the session's MariaDB (tests/harness/mysql84): a
    test's own, so that its authentication cache starts empty."""
    with mysql84_front(mariadb) as front:
        yield front


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


@pytest.fixture(scope="session")
def certificates(services_dir: Path) -> Certificates:
    return make_certificates(services_dir.joinpath("certificates"))


@pytest.fixture(scope="session")
def tls_server(services_dir: Path, certificates: Certificates) -> Iterator[MariaDB]:
    """MariaDB serving a certificate of the test CA for 127.0.0.1, with a user created REQUIRE
    SSL (what require_secure_transport imposes on all) and one REQUIRE SUBJECT."""
    server = start_mariadb(services_dir.joinpath("tls"), options=certificates.server_options())
    server.execute(
        "CREATE USER cdc_ssl@'%' IDENTIFIED BY 'pw-ssl' REQUIRE SSL",
        "CREATE USER cdc_x509@'%' IDENTIFIED BY 'pw-x509' REQUIRE SUBJECT '/CN=cdc_x509'",
        "GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO cdc_ssl@'%', cdc_x509@'%'",
        "CREATE DATABASE shop",
        "CREATE TABLE shop.orders (id INT PRIMARY KEY, amount INT)",
        "INSERT INTO shop.orders VALUES (1, 10), (2, 20)",
    )
    yield server
    server.stop()


@pytest.fixture(scope="session")
def elsewhere_server(services_dir: Path, certificates: Certificates) -> Iterator[MariaDB]:
    """A server whose certificate names another host."""
    server = start_mariadb(services_dir.joinpath("elsewhere"), options=certificates.server_options("elsewhere"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tls_postgresql(services_dir: Path, certificates: Certificates) -> Iterator[PostgreSQL]:
    """PostgreSQL serving a certificate of the test CA for 127.0.0.1."""
    base = services_dir / "tls-postgresql"
    server = start_postgresql(base, options=postgres_options(certificates, base))
    yield server
    server.stop()
