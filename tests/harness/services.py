"""Starts MariaDB (binlog on, row format, FULL metadata) and PostgreSQL as real processes.

Each server gets a private data directory and a free loopback port; nothing touches the
machine's own database services. CI runs as root: mariadbd then needs --user=root, and
PostgreSQL refuses root outright, so it runs as `nobody` in a directory that user owns.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pymysql

from sluice.source.connection import with_surrogates
from sluice.source.endpoint import SourceEndpoint

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class MariaDB:
    port: int
    datadir: Path
    process: subprocess.Popen
    user: str = "root"
    password: str = "sluice-test"
    host: str = "127.0.0.1"

    def connect(self, database: str | None = None, surrogates: bool = True, **kwargs) -> pymysql.connections.Connection:
        """`surrogates`: strings with the UTF-16 surrogates MariaDB keeps, as Sluice reads
        them (else PyMySQL's own decoding, a benchmark's baseline)."""
        conn = pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=database,
            autocommit=True,
            charset="utf8mb4",
            **kwargs,
        )
        return with_surrogates(conn) if surrogates else conn

    def endpoint(self) -> SourceEndpoint:
        """How Sluice's own code reaches this server."""
        return SourceEndpoint(self.host, self.port, self.user, self.password)

    def execute(self, *statements: str, database: str | None = None) -> None:
        conn = self.connect(database)
        try:
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
        finally:
            conn.close()

    @contextlib.contextmanager
    def global_setting(self, name: str, value: str | int) -> Iterator[None]:
        """SET GLOBAL name = value for the duration of a block, then the old value again."""
        conn = self.connect()
        with conn.cursor() as cur:
            cur.execute(f"SELECT @@GLOBAL.{name}")
            (before,) = cur.fetchone()
            cur.execute(f"SET GLOBAL {name} = %s", (value,))
        try:
            yield
        finally:
            with conn.cursor() as cur:
                cur.execute(f"SET GLOBAL {name} = %s", (before,))
            conn.close()

    def purge_binlogs(self) -> None:
        """Starts a new binlog and purges every older one, as a short retention would.
        MariaDB keeps a binlog until InnoDB no longer needs it for crash recovery: retry."""
        conn = self.connect()
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("SHOW MASTER STATUS")
            (current, *_) = cur.fetchone()
            deadline = time.monotonic() + 30
            while True:
                cur.execute(f"PURGE BINARY LOGS TO '{current}'")
                cur.execute("SHOW BINARY LOGS")
                if [row[0] for row in cur.fetchall()] == [current]:
                    break
                assert time.monotonic() < deadline, "MariaDB kept the older binlogs"
                time.sleep(0.2)
        conn.close()

    def stop(self) -> None:
        _stop(self.process)

    def start_again(self) -> None:
        """Starts the stopped server again on its data and port, as a restart of the service does."""
        assert self.process.poll() is not None, "still running"
        log = open(self.datadir / "server.log", "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(self.process.args, stdout=log, stderr=subprocess.STDOUT)
        _wait(lambda: self.connect().close(), f"MariaDB on port {self.port}", self.datadir / "server.log")


@dataclass
class PostgreSQL:
    port: int
    datadir: Path
    user: str = "sluice"
    password: str = "sluice-test"
    host: str = "127.0.0.1"
    database: str = "target"

    @property
    def url(self) -> str:
        return f"postgresql://{self.host}:{self.port}/{self.database}"

    def connect(self, database: str | None = None) -> psycopg.Connection:
        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=database or self.database,
            autocommit=True,
        )

    def stop(self) -> None:
        _as_postgres_user([str(PG_BIN / "pg_ctl"), "-D", str(self.datadir), "-m", "fast", "stop"])


# Servers as tests run them: fast, not durable. `make bench` runs servers as users do,
# durable and with the packages' defaults (the tuned settings only when asked).
MARIADB_TUNED = ("--innodb-buffer-pool-size=512M", "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0")
POSTGRES_TUNED = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
SETTINGS = ("tuned", "default")


def start_mariadb(base: Path, server_id: int = 1, options: Sequence[str] = (), settings: str = "tuned") -> MariaDB:
    datadir, tmpdir = base / "mariadb", base / "mariadb-tmp"
    for directory in (datadir, tmpdir):
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
    # A directory of its own for temporary tables: a MariaDB starting removes every #sql*
    # file in its tmpdir, and in a shared /tmp those were another server's tables in use
    # (a test failed on "Error on delete of '/tmp/#sql-temptable-...MAI'").
    private_tmp = f"--tmpdir={tmpdir}"
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    if not install:
        raise RuntimeError("mariadb-install-db not found: install the mariadb-server package")
    command = [
        install,
        "--no-defaults",
        f"--datadir={datadir}",
        "--user=root",
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
        private_tmp,
    ]
    for _ in range(2):  # seen failing once under two busy test workers, without a cause it printed
        installed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if installed.returncode == 0:
            break
        shutil.rmtree(datadir)
        datadir.mkdir(parents=True)
    else:
        raise RuntimeError(f"mariadb-install-db failed (exit {installed.returncode}):\n{installed.stdout[-4000:]}")
    port = free_port()
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    log = open(datadir / "server.log", "wb")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen(
        [
            mariadbd,
            "--no-defaults",
            f"--datadir={datadir}",
            "--user=root",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--socket={datadir}/mysqld.sock",
            f"--pid-file={datadir}/mysqld.pid",
            private_tmp,
            f"--server-id={server_id}",
            "--log-bin=mysql-bin",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--binlog-row-metadata=FULL",
            *(MARIADB_TUNED if settings == "tuned" else ()),
            "--max-connections=500",
            "--skip-name-resolve",
            "--character-set-server=utf8mb4",
            "--max-recursive-iterations=100000000",
            *options,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = MariaDB(port, datadir, process)
    _wait(lambda: _root_setup(server, datadir), f"MariaDB on port {port}", datadir / "server.log")
    return server


def replicate(replica: MariaDB, primary: MariaDB) -> None:
    """Makes `replica` a GTID replica of `primary`; start it with --log-slave-updates so its
    own binlog has the primary's transactions, under the same GTIDs."""
    replica.execute(
        f"CHANGE MASTER TO MASTER_HOST='{primary.host}', MASTER_PORT={primary.port}, "
        f"MASTER_USER='{primary.user}', MASTER_PASSWORD='{primary.password}', MASTER_USE_GTID=slave_pos",
        "START SLAVE",
    )


def wait_replicated(replica: MariaDB, primary: MariaDB, timeout: float = 60) -> None:
    conn = primary.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        (position,) = cur.fetchone()
    conn.close()
    conn = replica.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (position, timeout))
        (waited,) = cur.fetchone()
    conn.close()
    if waited != 0:
        raise RuntimeError(f"replica on port {replica.port} did not reach {position} in {timeout}s")


def _root_setup(server: MariaDB, datadir: Path) -> None:
    if server.process.poll() is not None:
        raise RuntimeError((datadir / "server.log").read_text()[-2000:])
    conn = pymysql.connect(unix_socket=str(datadir / "mysqld.sock"), user="root")
    with conn.cursor() as cur:
        cur.execute(f"ALTER USER 'root'@'localhost' IDENTIFIED BY '{server.password}'")
        cur.execute("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'")
        cur.execute(f"ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '{server.password}'")
        cur.execute("GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
    conn.close()


def start_postgresql(base: Path, settings: str = "tuned", options: Sequence[str] = ()) -> PostgreSQL:
    datadir = base / "postgresql"
    if datadir.exists():
        shutil.rmtree(datadir)
    datadir.mkdir(parents=True)
    server = PostgreSQL(free_port(), datadir)
    pwfile = base / "pg-password"
    pwfile.write_text(server.password + "\n")
    for path in (base, datadir, pwfile):
        shutil.chown(path, "nobody")
    os.chmod(base, 0o755)
    _as_postgres_user(
        [
            str(PG_BIN / "initdb"),
            "-D",
            str(datadir),
            "-U",
            server.user,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        ]
    )
    _as_postgres_user(
        [
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(datadir),
            "-l",
            str(datadir / "server.log"),
            "-w",
            "-o",
            f"-p {server.port} -h 127.0.0.1 -k {datadir} "
            + (POSTGRES_TUNED if settings == "tuned" else "")
            + "-c max_connections=200"
            + "".join(f" {option}" for option in options),
            "start",
        ]
    )

    def create_database() -> None:
        with server.connect("postgres") as conn:
            conn.execute(f"CREATE DATABASE {server.database}")

    _wait(create_database, f"PostgreSQL on port {server.port}", datadir / "server.log")
    return server


def _as_postgres_user(command: list[str]) -> None:
    if os.geteuid() == 0:
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stderr.strip()}")


def _wait(probe, what: str, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            probe()
            return
        except Exception as exc:  # noqa: BLE001 - any failure means "not up yet"
            if time.monotonic() > deadline:
                tail = log.read_text()[-2000:] if log.exists() else ""
                raise RuntimeError(f"{what} did not start: {exc}\n{tail}") from exc
            time.sleep(0.2)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()


def scratch_directory(prefix: str, removed_at_exit: bool = False) -> Path:
    """A new directory the PostgreSQL server's user can reach too; `removed_at_exit` when
    the process ends well (a bench's servers leave gigabytes of binlog and WAL behind)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    if removed_at_exit:
        atexit.register(_remove_unless_failed, path)
    return path


def _remove_unless_failed(path: Path) -> None:
    """At exit: the directory goes, but after an uncaught exception (the interpreter sets
    sys.last_value as it prints it) its server logs stay for a look."""
    if hasattr(sys, "last_value"):
        print(f"kept for inspection: {path}", file=sys.stderr)
    else:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def running_services(base: Path, settings: str = "tuned") -> Iterator[tuple[MariaDB, PostgreSQL]]:
    base.mkdir(parents=True, exist_ok=True)
    mariadb = start_mariadb(base, settings=settings)
    try:
        postgresql = start_postgresql(base, settings=settings)
        try:
            yield mariadb, postgresql
        finally:
            postgresql.stop()
    finally:
        mariadb.stop()


def server_settings(mariadb: MariaDB, postgresql: PostgreSQL | None = None) -> str:
    """What the servers run with, as they report it: the settings that decide a copy's speed."""
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute(
            "SELECT VERSION(), @@innodb_buffer_pool_size >> 20, @@innodb_flush_log_at_trx_commit, @@sync_binlog, "
            "@@binlog_format"
        )
        version, pool, flush, sync_binlog, binlog_format = cur.fetchone()
    conn.close()
    said = (
        f"MariaDB {version.split('-')[0]}: innodb_buffer_pool_size={pool}M "
        f"innodb_flush_log_at_trx_commit={flush} sync_binlog={sync_binlog} binlog_format={binlog_format}"
    )
    if postgresql is not None:
        with postgresql.connect() as conn:
            names = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "shared_buffers")
            values = [conn.execute(f"SHOW {name}").fetchone()[0] for name in names]
        said += (
            "; PostgreSQL "
            + values[0].split()[0]
            + ": "
            + " ".join(f"{n}={v}" for n, v in zip(names[1:], values[1:], strict=True))
        )
    return said
