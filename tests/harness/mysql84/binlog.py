"""MariaDB's binlog, as MySQL 8.4 would have written it: the stand-in reads the MariaDB
behind it's binlog files from its data directory and translates them event by event into
files of MySQL's format, whose positions are the positions the stand-in reports and serves.

What changes (MySQL's event layouts from libbinlogevents' documentation):
- the format description: MySQL 8.4's version and post-header lengths;
- MariaDB's GTID list at a file's start becomes Previous_gtids; its binlog checkpoint and
  Annotate_rows events have no MySQL counterpart and go;
- a transaction's MariaDB GTID event becomes MySQL's GTID event, or its tagged one (the
  source uuid; a domain stands for a tag: Mysql84Settings.tags), with its logical clock,
  commit time and the transaction's length, followed by a Query "BEGIN" where the
  transaction has rows (all its events in one zstd Transaction_payload where
  binlog_transaction_compression is ON);
- V1 rows events become V2 ones (8.4 removed V1); a Query event keeps the status variables
  MySQL has and loses MariaDB's own.
A transaction is translated whole once its end is in the file, as MySQL writes it whole at
commit. Anything else the translation meets stops it, naming the event."""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness.mysql84 import events, wire
from tests.harness.mysql84.statements import Mysql84Settings

MAGIC = b"\xfebin"
_MARIADB_ANNOTATE_ROWS, _MARIADB_CHECKPOINT, _MARIADB_GTID, _MARIADB_GTID_LIST = 160, 161, 162, 163
_FL_STANDALONE, _FL_GROUP_COMMIT_ID = 0x01, 0x02

# A Query event's status variables MySQL has too (code: length, or None: measured); MariaDB's
# own (128 and up) are left out.
_STATUS_FIXED = {0: 4, 1: 8, 3: 4, 4: 6, 7: 2, 8: 2, 9: 8, 10: 4, 13: 3, 128: 3, 129: 8, 130: 1}


class NotTranslatable(Exception):
    """The binlog holds what the stand-in does not translate."""


def _status_vars(data: bytes) -> bytes:
    kept, at = bytearray(), 0
    while at < len(data):
        code, start = data[at], at
        at += 1
        if code in _STATUS_FIXED:
            at += _STATUS_FIXED[code]
        elif code in (5, 6):  # time zone, catalog: a length and the text
            at += 1 + data[at]
        elif code == 2:  # the old catalog: a length, the text and a NUL
            at += 2 + data[at]
        elif code == 11:  # the invoker: user, then host, each a length and the text
            at += 1 + data[at]
            at += 1 + data[at]
        elif code == 12:  # updated databases: a count (254: too many), then NUL-ended names
            count, at = data[at], at + 1
            for _ in range(0 if count == 254 else count):
                at = data.index(b"\x00", at) + 1
        else:
            raise NotTranslatable(f"a Query event's status variable {code} is unknown to the stand-in")
        if code < 128:
            kept += data[start:at]
    return bytes(kept)


@dataclass
class _Event:
    kind: int
    timestamp: int
    server_id: int
    flags: int
    body: bytes  # without the checksum

    @classmethod
    def parse(cls, data: bytes) -> _Event:
        timestamp, kind, server_id, _, _, flags = events.HEADER.unpack_from(data)
        return cls(kind, timestamp, server_id, flags, data[events.HEADER_LENGTH : -4])


@dataclass
class TranslatedFile:
    name: str
    previous: dict[str, int] = field(default_factory=dict)  # per tag, the last number executed before it
    data: bytearray = field(default_factory=lambda: bytearray(MAGIC))
    read_to: int = 4  # how far the MariaDB file is translated
    closed: bool = False  # rotated away from (or the server stopped)
    starts: list[int] = field(default_factory=list)  # where each event starts
    transactions: list[tuple[str, int, int, int]] = field(default_factory=list)  # tag, number, start, end


class TranslatedBinlog:
    """The MariaDB data directory's binlog files, translated as far as they are written
    (catch_up). Shared by every session of the front."""

    def __init__(self, datadir: Path, settings: Mysql84Settings, first: str) -> None:
        """`first`: the oldest file the stand-in serves (older ones count as purged)."""
        self.datadir, self.settings, self.first = datadir, settings, first
        self.files: list[TranslatedFile] = []
        self._lock = threading.Lock()
        self._pending: list[_Event] = []  # the transaction being read
        self._sequence = 0  # the logical clock's sequence number in the current file

    def catch_up(self) -> None:
        with self._lock:
            self._catch_up()

    def _catch_up(self) -> None:
        names = [n.strip() for n in (self.datadir / "mysql-bin.index").read_text().split()]
        names = [Path(n).name for n in names if n]
        for name in names[names.index(self.first) :]:
            if not any(f.name == name for f in self.files):
                self._open(name)
        for translated in self.files:
            if not translated.closed:
                self._read(translated)

    def status(self) -> tuple[str, int, dict[str, int]]:
        """The end (file, position) and what is executed up to it, as of one moment."""
        with self._lock:
            self._catch_up()
            last = self.files[-1]
            return last.name, len(last.data), self.executed_through(len(self.files) - 1)

    def executed(self) -> dict[str, int]:
        """Per tag, the last number: 1 to it are executed (MariaDB's GTID sequences have no gaps)."""
        return self.status()[2]

    def executed_through(self, index: int) -> dict[str, int]:
        """As of the end of the `index`th file."""
        translated = self.files[index]
        done = dict(translated.previous)
        done.update({tag: number for tag, number, _, _ in translated.transactions})
        return done

    def _open(self, name: str) -> None:
        self.files.append(TranslatedFile(name))
        self._sequence = 0

    def _read(self, translated: TranslatedFile) -> None:
        raw = (self.datadir / translated.name).read_bytes()
        at = translated.read_to
        while at + events.HEADER_LENGTH <= len(raw):
            size = events.HEADER.unpack_from(raw, at)[3]
            if at + size > len(raw):
                break  # still being written
            self._translate(translated, _Event.parse(raw[at : at + size]))
            at += size
            if not self._pending:
                translated.read_to = at
        if self._pending:  # a transaction whose end is not written yet: read it again whole
            self._pending = []

    # -- events ----------------------------------------------------------------------------

    def _append(self, translated: TranslatedFile, kind: int, body: bytes, source: _Event, flags: int = 0) -> None:
        end = len(translated.data) + events.HEADER_LENGTH + len(body) + 4
        translated.starts.append(len(translated.data))
        translated.data += events.event(kind, body, end, source.timestamp, source.server_id, flags)

    def _translate(self, translated: TranslatedFile, event: _Event) -> None:
        kind = event.kind
        if self._pending:
            self._in_transaction(translated, event)
        elif kind == events.FORMAT_DESCRIPTION:
            created = struct.unpack_from("<I", event.body, 52)[0]
            self._append(translated, kind, events.format_description(self.settings.version, created), event)
        elif kind == _MARIADB_GTID_LIST:
            translated.previous = self._gtid_list(event.body)
            self._append(translated, events.PREVIOUS_GTIDS, self.gtid_set(translated.previous), event)
        elif kind == _MARIADB_CHECKPOINT:
            pass
        elif kind == _MARIADB_GTID:
            self._pending = [event]
        elif kind in (events.ROTATE, events.STOP):
            self._append(translated, kind, event.body, event)
            translated.closed = True
        else:
            raise NotTranslatable(f"{translated.name}: event type {kind} outside a transaction")

    def _gtid_list(self, body: bytes) -> dict[str, int]:
        """MariaDB's GTID list: per domain, the last GTID of the binlog before the file."""
        count = struct.unpack_from("<I", body)[0] & 0x0FFFFFFF
        done = {}
        for k in range(count):
            domain, _server, number = struct.unpack_from("<IIQ", body, 4 + 16 * k)
            done[self._tag(domain)] = number
        return done

    def _tag(self, domain: int) -> str:
        if domain not in self.settings.tags:
            raise NotTranslatable(f"MariaDB GTID domain {domain} has no tag in the stand-in's settings")
        return self.settings.tags[domain]

    def gtid_set(self, done: dict[str, int]) -> bytes:
        """The GTID set of `done` (per tag, 1 to its last) as Previous_gtids carries it."""
        sid = self.settings.server_uuid
        return events.gtid_set({(sid, tag): [(1, last)] for tag, last in done.items() if last})

    def _in_transaction(self, translated: TranslatedFile, event: _Event) -> None:
        self._pending.append(event)
        gtid = self._pending[0]
        standalone = bool(gtid.body[12] & _FL_STANDALONE)
        ends = event.kind == events.XID or (event.kind == events.QUERY and (standalone or _is_commit(event)))
        if ends:
            self._write_transaction(translated, self._pending)
            self._pending = []

    def _write_transaction(self, translated: TranslatedFile, source: list[_Event]) -> None:
        gtid_event, inner = source[0], source[1:]
        number, domain = struct.unpack_from("<QI", gtid_event.body)
        tag = self._tag(domain)
        standalone = bool(gtid_event.body[12] & _FL_STANDALONE)
        bodies: list[tuple[int, bytes, _Event]] = []
        if not standalone:
            bodies.append((events.QUERY, events.query(0, "", "BEGIN", b""), gtid_event))
        for event in inner:
            translated_event = self._inner(event)
            if translated_event is not None:
                bodies.append((*translated_event, event))
        if not standalone and self.settings.variables["binlog_transaction_compression"] == "ON":
            # one Transaction_payload holds the transaction's events but its GTID (DDL is
            # never compressed)
            held = [events.bare_event(kind, body, e.timestamp, e.server_id) for kind, body, e in bodies]
            bodies = [(events.TRANSACTION_PAYLOAD, events.transaction_payload(held), bodies[-1][2])]
        self._sequence += 1
        rest = sum(events.HEADER_LENGTH + len(body) + 4 for _, body, _ in bodies)
        length = rest  # the transaction's length counts its GTID event, whose size depends on it
        while length != rest + events.HEADER_LENGTH + len(self._gtid_body(tag, number, length)) + 4:
            length = rest + events.HEADER_LENGTH + len(self._gtid_body(tag, number, length)) + 4
        start = len(translated.data)
        body = self._gtid_body(tag, number, length, gtid_event.timestamp)
        self._append(translated, events.GTID_TAGGED if tag else events.GTID, body, gtid_event)
        for kind, body, event in bodies:
            self._append(translated, kind, body, event)
        translated.transactions.append((tag, number, start, len(translated.data)))

    def _gtid_body(self, tag: str, number: int, length: int, timestamp: int = 0) -> bytes:
        sid, clock = self.settings.server_uuid, (self._sequence - 1, self._sequence)
        if tag:
            return events.gtid_tagged(sid, tag, number, *clock, timestamp * 1_000_000, length)
        return events.gtid(sid, number, *clock, timestamp * 1_000_000, length)

    def _inner(self, event: _Event) -> tuple[int, bytes] | None:
        kind = event.kind
        if kind == _MARIADB_ANNOTATE_ROWS:
            return None
        if kind == events.TABLE_MAP and self.settings.variables["binlog_row_metadata"] == "MINIMAL":
            return kind, _minimal_metadata(event.body)
        if kind in (events.TABLE_MAP, events.XID, events.WRITE_ROWS, events.UPDATE_ROWS, events.DELETE_ROWS):
            return kind, event.body
        if kind in (events.WRITE_ROWS_V1, events.UPDATE_ROWS_V1, events.DELETE_ROWS_V1):
            # V2: the post-header gains the length of the extra row data (2: none)
            return kind + 7, event.body[:8] + b"\x02\x00" + event.body[8:]
        if kind == events.QUERY:
            thread, seconds, db_length, error, status_length = struct.unpack_from("<IIBHH", event.body)
            status = _status_vars(event.body[13 : 13 + status_length])
            rest = event.body[13 + status_length :]
            return kind, struct.pack("<IIBHH", thread, seconds, db_length, error, len(status)) + status + rest
        raise NotTranslatable(f"event type {kind} inside a transaction")


def _is_commit(event: _Event) -> bool:
    status_length = struct.unpack_from("<H", event.body, 11)[0]
    db_length = event.body[8]
    statement = event.body[13 + status_length + db_length + 1 :]
    return statement.strip().upper() in (b"COMMIT", b"ROLLBACK")


# binlog_row_metadata=MINIMAL keeps signedness, character sets and geometry types; FULL adds
# column names, SET and ENUM values and the primary key (MySQL's Table_map_event::Optional_metadata_field_type).
_MINIMAL_FIELDS = {1, 2, 3, 7, 10, 11}


def _minimal_metadata(body: bytes) -> bytes:
    """A table map's body with only the optional metadata MINIMAL writes."""
    at = 8
    at += 1 + body[at] + 1  # the database's name
    at += 1 + body[at] + 1  # the table's
    count, at = wire.read_lenenc_int(body, at)
    at += count
    metadata_length, at = wire.read_lenenc_int(body, at)
    at += metadata_length + (count + 7) // 8
    kept = bytearray(body[:at])
    while at < len(body):
        kind = body[at]
        length, value_at = wire.read_lenenc_int(body, at + 1)
        if kind in _MINIMAL_FIELDS:
            kept += body[at : value_at + length]
        at = value_at + length
    return bytes(kept)
