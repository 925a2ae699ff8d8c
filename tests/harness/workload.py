"""A random OLTP workload on the source: inserts, updates (some changing the primary key),
deletes and multi-statement transactions, and, once allowed, schema changes (ADD, RENAME,
DROP and MODIFY COLUMN), from a seeded generator so failures replay."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

import pymysql

from tests.harness.services import MariaDB

TABLE_DDL = (
    "CREATE TABLE {db}.{table} ({id}, name VARCHAR(64) NOT NULL, "
    "amount DECIMAL(12,2), qty INT, updated DATETIME(3), note TEXT{key})"
)
# How `id` identifies a row: the primary key, a UNIQUE NOT NULL key, or nothing (a bag,
# where equal rows may repeat; captured with `id` as its chunk key).
KEYS = {
    "primary": ("id BIGINT PRIMARY KEY", ""),
    "unique": ("id BIGINT NOT NULL", ", UNIQUE KEY (id)"),
    "bag": ("id BIGINT", ", KEY (id)"),
}


def create_table(
    mariadb: MariaDB, db: str, table: str, rows: int, seed: int = 1, key: str = "primary", legacy: bool = False
) -> None:
    """`legacy`: some values are what legacy estates hold (see `_row`)."""
    column, index = KEYS[key]
    mariadb.execute(TABLE_DDL.format(db=db, table=table, id=column, key=index))
    rng = random.Random(seed)
    conn = mariadb.connect(db)
    with conn.cursor() as cur:
        batch = []
        for i in range(1, rows + 1):
            batch.append(_row(rng, i * 10, legacy))
            if len(batch) == 5000:
                _insert(cur, table, batch)
                batch = []
        _insert(cur, table, batch)
    conn.close()


def _row(rng: random.Random, key: int, legacy: bool = False) -> tuple:
    """`legacy`: one row in ten has a zero or partial date, a NUL character in its note, or
    UTF-16 surrogates there (a legacy client's CESU-8 pair, or a lone one)."""
    updated = f"2024-0{rng.randrange(1, 10)}-1{rng.randrange(10)} 12:00:00.{rng.randrange(1000):03d}"
    note = None if rng.random() < 0.2 else "note " * rng.randrange(5)
    if legacy and rng.random() < 0.1:
        updated = rng.choice(["0000-00-00 00:00:00.000", "2020-00-15 12:00:00.000", "2021-03-00 00:00:00.000"])
    if legacy and rng.random() < 0.1:
        note = f"a\0b{rng.randrange(10)}\0"
    if legacy and rng.random() < 0.1:
        note = rng.choice(["\ud83d\ude00 cesu", "lone \ud800"])
    return (key, f"name-{rng.randrange(10**6)}", round(rng.uniform(0, 10000), 2), rng.randrange(1000), updated, note)


INSERT = "INSERT INTO {table} (id, name, amount, qty, updated, note) VALUES (%s, %s, %s, %s, %s, %s)"
DDL_RATE = 0.02
DEADLOCK = 1213  # of operations, once schema changes are allowed


def _insert(cur, table: str, rows: list[tuple]) -> None:
    if rows:
        cur.executemany(INSERT.format(table=table), rows)


class RandomWorkload:
    """Runs random changes against tables of TABLE_DDL's shape until stopped."""

    def __init__(
        self,
        mariadb: MariaDB,
        db: str,
        tables: Sequence[str],
        seed: int,
        max_key: int,
        bags: Sequence[str] = (),
        ddl_tables: Sequence[str] = (),
        legacy: bool = False,
        row_images: Sequence[str] = (),
        gtid_domains: Sequence[int] = (),
    ) -> None:
        """`bags`: tables without a key, where an operation touches one of the equal rows
        (LIMIT 1) and some inserts copy an existing row. `ddl_tables`: tables whose columns
        change once `allow_schema_changes` is set. `legacy`: inserted rows as `_row` says.
        `row_images`: each operation or transaction runs with one of these session
        binlog_row_images (the server's stays as it is). `gtid_domains`: each in one of these
        MariaDB GTID domains (the MySQL 8.4 stand-in's tags)."""
        self.legacy = legacy
        self.row_images = list(row_images)
        self.gtid_domains = list(gtid_domains)
        self.mariadb = mariadb
        self.db = db
        self.tables = list(tables)
        self.bags = set(bags)
        self.rng = random.Random(seed)
        self.next_key = max_key + 1
        self.operations = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.ddl_tables = list(ddl_tables)
        self.allow_schema_changes = threading.Event()
        self.extras: dict[str, list[str]] = {table: [] for table in ddl_tables}  # columns the DDL added
        self.schema_changes: list[str] = []
        self.deadlocks = 0  # with a concurrent ALTER TABLE, InnoDB may pick a workload transaction

    def run(self, operations: int, rate: float = 0) -> None:
        """`rate`: operations per second at most (0: as fast as the server takes them)."""
        conn = self.mariadb.connect(self.db)
        started = time.monotonic()
        try:
            with conn.cursor() as cur:
                while self.operations < operations and not self._stop.is_set():
                    if rate and (ahead := self.operations / rate - (time.monotonic() - started)) > 0:
                        time.sleep(ahead)
                    if self.row_images:
                        cur.execute(f"SET SESSION binlog_row_image = {self.rng.choice(self.row_images)}")
                    if self.gtid_domains:
                        cur.execute(f"SET SESSION gtid_domain_id = {self.rng.choice(self.gtid_domains)}")
                    try:
                        if self.rng.random() < 0.2:
                            cur.execute("BEGIN")
                            for _ in range(self.rng.randrange(2, 6)):
                                self._one(cur)
                            cur.execute("COMMIT")
                        else:
                            self._one(cur)
                    except pymysql.err.OperationalError as exc:
                        if exc.args[0] != DEADLOCK:
                            raise
                        cur.execute("ROLLBACK")  # as an application does: the server rolled it back
                        self.deadlocks += 1
        finally:
            conn.close()

    def _one(self, cur) -> None:
        if self.ddl_tables and self.allow_schema_changes.is_set() and self.rng.random() < DDL_RATE:
            self._schema_change(cur, self.rng.choice(self.ddl_tables))
            return
        table = self.rng.choice(self.tables)
        roll = self.rng.random()
        key = self._existing_key(cur, table)
        one = " LIMIT 1" if table in self.bags else ""
        if key is not None and one and roll < 0.1:
            # An exact copy of a row: the bag now holds two equal rows.
            cur.execute(f"INSERT INTO {table} SELECT * FROM {table} WHERE id = %s LIMIT 1", (key,))
        elif roll < 0.35 or key is None:
            self.next_key += 1
            cur.execute(INSERT.format(table=table), _row(self.rng, self.next_key, self.legacy))
        elif roll < 0.70:
            extra = "".join(f", {c} = {self.rng.randrange(10**6)}" for c in self.extras.get(table, [])[-1:])
            cur.execute(
                f"UPDATE {table} SET name = %s, amount = amount + 1, qty = %s{extra} WHERE id = %s{one}",
                (f"upd-{self.rng.randrange(10**6)}", self.rng.randrange(1000), key),
            )
        elif roll < 0.82:
            # A key change: the row moves, possibly into another chunk.
            self.next_key += 1
            cur.execute(f"UPDATE {table} SET id = %s WHERE id = %s{one}", (self.next_key, key))
        else:
            cur.execute(f"DELETE FROM {table} WHERE id = %s{one}", (key,))
        self.operations += 1

    def _schema_change(self, cur, table: str) -> None:
        """One DDL on `table`; the workload's own columns stay (only their types widen)."""
        extras = self.extras[table]
        roll = self.rng.random()
        self.next_key += 1
        if not extras or roll < 0.4:
            extras.append(f"x{self.next_key}")
            ddl = f"ALTER TABLE {table} ADD COLUMN {extras[-1]} INT"
        elif roll < 0.6:
            old, extras[-1] = extras[-1], f"x{self.next_key}"
            ddl = f"ALTER TABLE {table} RENAME COLUMN {old} TO {extras[-1]}"
        elif roll < 0.8:
            ddl = f"ALTER TABLE {table} DROP COLUMN {extras.pop(0)}"
        elif roll < 0.9:
            column = self.rng.choice([*extras, "qty"])
            ddl = f"ALTER TABLE {table} MODIFY {column} {self.rng.choice(['BIGINT', 'INT', 'DECIMAL(20,0)'])}"
        else:  # a swap, as online schema-change tools cut over: the new table is read whole
            for statement in (
                f"DROP TABLE IF EXISTS {table}_swap_old",
                f"CREATE TABLE {table}_swap_new LIKE {table}",
                f"INSERT INTO {table}_swap_new SELECT * FROM {table}",
            ):
                cur.execute(statement)
            ddl = f"RENAME TABLE {table} TO {table}_swap_old, {table}_swap_new TO {table}"
        cur.execute(ddl)
        self.schema_changes.append(ddl)
        self.operations += 1

    def _existing_key(self, cur, table: str) -> int | None:
        probe = self.rng.randrange(1, self.next_key)
        cur.execute(f"SELECT id FROM {table} WHERE id >= %s ORDER BY id LIMIT 1", (probe,))
        row = cur.fetchone()
        return row[0] if row else None

    def start(self, operations: int, rate: float = 0) -> None:
        def target() -> None:
            try:
                self.run(operations, rate)
            except BaseException as exc:  # noqa: BLE001 - re-raised by join()
                self.error = exc

        self._thread = threading.Thread(target=target, name="workload", daemon=True)
        self._thread.start()

    def join(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.error is not None:
            raise self.error
