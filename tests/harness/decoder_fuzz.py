"""The row image decoders fuzzed against each other: the C loop and its Python reference
must give equal rows, or both refuse, on any bytes.

The corpus is real: rows of every column type (tests/harness/column_types.py) written to a
real MariaDB, inserted, updated and deleted, and their rows events read back from the
binlog undecoded. Each case is then decoded as it is and mutated: the body cut at an
offset, bits flipped, bytes changed, put in or taken out, the column bitmaps changed, and
the table map's metadata (precision, scale, fractional seconds, lengths, types) changed.

`python -m tests.harness.decoder_fuzz CORPUS --seed N --seconds S` runs the cases in this
process (so a crash or a hang ends it, which its caller sees) and prints every difference as
a line of JSON, with the case that shows it; it exits 1 if there is any. Without CORPUS it
starts a MariaDB and captures one first (`make fuzz` runs it so, on a build with ASan and
UBSan).
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import signal
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from sluice.binlog.rows import row_image_decoder
from sluice.binlog.rows.event_reader import Replica
from sluice.binlog.rows.row_image_decoder import RowImageDecoder
from sluice.binlog.transaction_reader import BinlogSource, Transaction, read_transactions
from sluice.source.connection import current_offset
from sluice.source.schema import TableSchema, read_table_schema
from tests.harness.column_types import COLUMNS, create_every_type_table, random_value

# The table map's attributes the decoders read (column_readers.py).
METADATA = ("name", "type", "unsigned", "character_set_name", "max_length", "length_size", "precision", "decimals")
METADATA += ("fsp", "bytes", "size", "compressed", "enum_values", "set_values")
CASE_SECONDS = 10  # a case that takes longer hangs


@dataclass(frozen=True)
class Case:
    """One rows event's images with the table map and schema they are decoded with."""

    columns: tuple[SimpleNamespace, ...]
    schema: TableSchema
    body: bytes
    present: tuple[bytes, ...]
    mutation: str = "as written"

    def shown(self) -> dict[str, Any]:
        """The case as a regression test would spell it."""
        return {
            "mutation": self.mutation,
            "body": self.body.hex(),
            "present": [p.hex() for p in self.present],
            "columns": [{k: getattr(c, k) for k in METADATA if hasattr(c, k)} for c in self.columns],
        }


def table_map_columns(columns: Any) -> tuple[SimpleNamespace, ...]:
    """python-mysql-replication's columns as plain values (what a corpus file keeps)."""
    return tuple(SimpleNamespace(**{k: getattr(c, k) for k in METADATA if hasattr(c, k)}) for c in columns)


def outcome(case: Case, compiled: bool) -> tuple[str, str]:
    """("rows", their repr) or ("refused", the error's type); which loop, by `compiled`."""
    row_image_decoder.COMPILED = compiled
    try:
        rows = RowImageDecoder(case.columns, case.schema).images(case.body, case.present)
    except ValueError:
        return ("refused", "ValueError")
    except Exception as exc:  # noqa: BLE001 - the stop takes any; which one differs is what is found
        return ("refused", type(exc).__name__)
    return ("rows", repr(rows))


def difference(case: Case) -> dict[str, Any] | None:
    compiled, python = outcome(case, True), outcome(case, False)
    if compiled == python or (compiled[0] == python[0] == "refused"):
        return None
    return {"compiled": compiled[1][:300], "python": python[1][:300], **case.shown()}


# -- mutations ------------------------------------------------------------------------------

_TYPES = (
    FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG, FIELD_TYPE.INT24, FIELD_TYPE.FLOAT,
    FIELD_TYPE.DOUBLE, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB,
    FIELD_TYPE.DATETIME2, FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.TIME2, FIELD_TYPE.DATE, FIELD_TYPE.YEAR, FIELD_TYPE.BIT,
)  # fmt: skip


def mutated(case: Case, rng: random.Random) -> Case:
    body, how = bytearray(case.body), rng.randrange(8)
    if how == 0 and body:
        cut = rng.randrange(len(body))
        return replace(case, body=bytes(body[:cut]), mutation=f"cut at {cut}")
    if how == 1 and body:
        flips = [rng.randrange(8 * len(body)) for _ in range(rng.randint(1, 4))]
        for bit in flips:
            body[bit >> 3] ^= 1 << (bit & 7)
        return replace(case, body=bytes(body), mutation=f"bits {flips} flipped")
    if how == 2 and body:
        at = rng.randrange(len(body))
        body[at] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        return replace(case, body=bytes(body), mutation=f"byte {at} set to {body[at]}")
    if how == 3:
        at = rng.randrange(len(body) + 1)
        extra = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        return replace(case, body=bytes(body[:at]) + extra + bytes(body[at:]), mutation=f"{extra.hex()} put in at {at}")
    if how == 4 and body:
        at = rng.randrange(len(body))
        gone = rng.randint(1, 8)
        return replace(case, body=bytes(body[:at] + body[at + gone :]), mutation=f"{gone} bytes taken out at {at}")
    if how == 5:
        present = tuple(bytes(rng.randrange(256) for _ in p) for p in case.present)
        return replace(case, present=present, mutation=f"bitmaps {[p.hex() for p in present]}")
    return _metadata_mutated(case, rng)


def _metadata_mutated(case: Case, rng: random.Random) -> Case:
    columns = [SimpleNamespace(**vars(c)) for c in case.columns]
    column = rng.choice(columns)
    field = rng.choice(("fsp", "precision", "decimals", "max_length", "length_size", "bytes", "size", "type"))
    value = rng.choice(_TYPES) if field == "type" else rng.choice((0, 1, 2, 5, 6, 7, 8, 9, 31, 38, 39, 65, 66, 255))
    setattr(column, field, value)
    return replace(case, columns=tuple(columns), mutation=f"column {column.name}: {field} = {value}")


def fuzz(corpus: list[Case], seed: int, seconds: float) -> tuple[int, list[dict[str, Any]]]:
    """Cases tried and the differences found, each as its case."""
    rng, found, tried = random.Random(seed), [], 0
    deadline = time.monotonic() + seconds
    signal.signal(signal.SIGALRM, _hung)
    for case in corpus:  # every case as written first
        found += _tried(case)
        tried += 1
    while time.monotonic() < deadline:
        found += _tried(mutated(rng.choice(corpus), rng))
        tried += 1
    return tried, found


def _tried(case: Case) -> list[dict[str, Any]]:
    global _current
    _current = case
    signal.alarm(CASE_SECONDS)
    try:
        found = difference(case)
    finally:
        signal.alarm(0)
    return [found] if found else []


_current: Case | None = None


def _hung(signum: int, frame: Any) -> None:
    print(json.dumps({"hang": True, **(_current.shown() if _current else {})}), flush=True)
    sys.exit(2)


# -- the corpus -----------------------------------------------------------------------------


def capture(mariadb: Any, database: str, rows: int = 40, seed: int = 20261129) -> list[Case]:
    """Rows of every column type written, changed and deleted; their rows events as cases."""
    rng, names = random.Random(seed), list(COLUMNS)
    insert, update = create_every_type_table(mariadb, database)
    conn = mariadb.connect(database)
    start = current_offset(conn)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for row_id in range(rows):
            cur.execute(insert, [row_id, *(random_value(rng, n) for n in names)])
        for row_id in range(0, rows, 2):
            cur.execute(update, [*(random_value(rng, n) for n in names), row_id])
        cur.execute("UPDATE every_type SET i = IFNULL(i, 0) DIV 2")  # events of many rows each
        cur.execute("DELETE FROM every_type WHERE id % 3 = 0")
    conn.commit()
    schema = read_table_schema(conn, database, "every_type", None)
    end = current_offset(conn)
    conn.close()
    source = BinlogSource(Replica(mariadb.endpoint(), 6950, True), stop_at=end)
    cases = []
    for item in read_transactions(source, start, {schema.table_id: schema}):
        for event in item.events if isinstance(item, Transaction) else ():
            columns = table_map_columns(event.decoder.columns)
            cases.append(Case(columns, event.decoder.schema, event.body, event.present))
    return cases


def _captured_on_a_new_server() -> list[Case]:
    from tests.harness.services import scratch_directory, start_mariadb

    server = start_mariadb(scratch_directory("sluice-fuzz-", removed_at_exit=True))
    try:
        server.execute("CREATE DATABASE fuzz")
        return capture(server, "fuzz")
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, help="a pickled corpus (default: capture one)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--sanitized", action="store_true", help="refuse to run on a build without ASan")
    args = parser.parse_args()
    built = Path(row_image_decoder._row_images.__file__)
    if args.sanitized and b"__asan_init" not in built.read_bytes():
        raise SystemExit(f"{built} is not built with AddressSanitizer")
    print(f"the C loop: {built}", flush=True)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    corpus = pickle.loads(args.corpus.read_bytes()) if args.corpus else _captured_on_a_new_server()
    print(f"fuzzing the row image decoders: {len(corpus)} rows events, seed {seed}, {args.seconds:.0f}s", flush=True)
    tried, found = fuzz(corpus, seed, args.seconds)
    for difference_found in found:
        print(json.dumps(difference_found), flush=True)
    print(f"{tried:,} cases, {len(found)} differences (seed {seed})", flush=True)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
