"""Rows events whose images leave columns out, made whole from the source by key.

A session may set binlog_row_image to MINIMAL or NOBLOB while the server's setting stays
FULL. Its rows events then carry the key and the columns the statement set (MINIMAL), or
every column but the LOBs it did not change (NOBLOB): an INSERT's DEFAULTs and an UPDATE's
untouched columns are not in the binlog at all. For a keyed table the columns an image left
out are read from the source by the row's key.

The read is a locking one (LOCK IN SHARE MODE). The server writes a transaction to the
binlog before InnoDB makes it visible; a locking read waits for the writer's commit, so it
sees the change or what came after it, never the row before it. The columns the image
carries keep the event's values, the others take the row's as read. A later change of
those comes later in the binlog and is applied in its turn, so once the pipeline has read
up to a position the target holds the source's rows as of it, as with full images. A row
gone when read (deleted, or moved to another key, by a later transaction) makes the change
a delete of its key: the later change that removed it finds nothing left to remove.

An update's columns its statement did not set are unchanged: where its before image
carries them they come from there, exactly (a table without a key is logged with its
before image whole). Of a before image only the key is made sure of: a target that holds
rows by key needs no more of it. A target that keeps every change as it happened (a
changelog) or a transform that computes from the row before the change (a filter, a
computed key) needs what nothing can read back: those stop at the event (TargetNeeds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import MySQLdb

from sluice.binlog.rows.event_reader import RowsEvent, partial_images_stop
from sluice.errors import SourceError
from sluice.event.row_change import RowChange, RowKind
from sluice.source.connection import connect_scan, decoding_surrogates
from sluice.source.endpoint import SourceEndpoint
from sluice.source.row_decoding import Row, RowDecoder
from sluice.source.schema import TableSchema
from sluice.source.sql import qualified, quote, selected

KEYS_AT_ONCE = 500  # keys one SELECT reads
ATTEMPTS = 5  # of a read InnoDB chose as a deadlock's victim, or whose lock wait timed out
_RETRIED = {1205, 1213}  # ER_LOCK_WAIT_TIMEOUT, ER_LOCK_DEADLOCK
_UNKNOWN_COLUMN = 1054


@dataclass(frozen=True)
class TargetNeeds:
    """What a pipeline's target needs of a change beyond the row's key and its values after
    it: the changes as they happened (a changelog keeps every before image, and values read
    now are not what a change wrote then), or the before image whole for the tables whose
    transform computes from it (a filter, a computed key)."""

    changelog: bool = False
    transformed: Callable[[str], bool] = lambda table_id: False


class ImageCompletion:
    """Makes the changes of partial rows events whole, or stops at the event where what the
    target needs (`needs`) is no longer anywhere."""

    def __init__(self, endpoint: SourceEndpoint, needs: TargetNeeds) -> None:
        self._endpoint = endpoint
        self._needs = needs
        self._conn: MySQLdb.connections.Connection | None = None

    def complete(self, event: RowsEvent) -> list[RowChange]:
        """The event's changes with every column of their after images: the columns an image
        carries, then those its before image carries (a statement did not set them, so they
        did not change), then the rest read from the source by key."""
        schema, width = event.decoder.schema, len(event.decoder.schema.columns)
        if event.decoder.row_end is not None:
            raise partial_images_stop(event, "a system-versioned table's history cannot be read back by key")
        carried = event.decoder.carried(event.present)
        before_has, after_has = carried[0], carried[-1]
        if event.kind is not RowKind.INSERT and len(before_has) < width:
            self._before_images_will_do(event, before_has)
        changes = event.changes()
        if event.kind is RowKind.DELETE:
            return changes
        from_before = before_has - after_has if event.kind is RowKind.UPDATE_AFTER else frozenset()
        known = after_has | from_before
        afters = [_overlaid(c.after, c.before, from_before) for c in changes]  # type: ignore[arg-type]
        missing = [i for i in range(width) if i not in known]
        if not missing:
            return [change._replace(after=after) for change, after in zip(changes, afters, strict=True)]
        if self._needs.changelog:
            raise partial_images_stop(
                event, "the target keeps every change as it happened, and the columns left out can only be read now"
            )
        if not schema.row_key:
            raise partial_images_stop(event, "the table has no key to read the columns left out by")
        if not known.issuperset(schema.position(name) for name in schema.row_key):
            raise partial_images_stop(event, "its images leave out part of the key the row is found by")
        decoder = RowDecoder(schema)
        read = self._rows(decoder, event, missing, afters)
        whole: list[RowChange] = []
        for change, after in zip(changes, afters, strict=True):
            found = read.get(decoder.row_key(after))
            if found is not None:
                row = tuple(after[i] if i in known else found[i] for i in range(width))
                whole.append(change._replace(after=row))
            elif change.kind is RowKind.UPDATE_AFTER:  # gone since: the key it had is gone too
                whole.append(change._replace(kind=RowKind.DELETE, after=None))
        return whole

    def _before_images_will_do(self, event: RowsEvent, before_has: frozenset[int]) -> None:
        """A before image that leaves columns out serves a target that finds rows by key,
        if it carries the key."""
        schema = event.decoder.schema
        if self._needs.changelog:
            raise partial_images_stop(
                event, "the target keeps every change with its before image, which is nowhere now"
            )
        if self._needs.transformed(event.table_id):
            raise partial_images_stop(
                event, "the table's transform computes from the row as it was before the change, which is nowhere now"
            )
        if not schema.row_key:
            raise partial_images_stop(event, "the table has no key, and its rows are found by every value")
        if not before_has.issuperset(schema.position(name) for name in schema.row_key):
            raise partial_images_stop(event, "its before image leaves out part of the key the row is found by")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _rows(self, decoder: RowDecoder, event: RowsEvent, missing: list[int], afters: list[Row]) -> dict[Any, Row]:
        """The source's rows of the afters' keys, by key: their key and `missing` columns
        filled in, the others None."""
        schema = decoder.schema
        keys = list(dict.fromkeys(decoder.row_key(after) for after in afters))
        wanted = sorted({*missing, *(schema.position(name) for name in schema.row_key)})
        found: dict[Any, Row] = {}
        for i in range(0, len(keys), KEYS_AT_ONCE):
            for values in self._select(schema, event, wanted, keys[i : i + KEYS_AT_ONCE]):
                row: list[Any] = [None] * len(schema.columns)
                for position, value in zip(wanted, values, strict=True):
                    row[position] = value
                whole = decoder.from_select(tuple(row))
                found[decoder.row_key(whole)] = whole
        return found

    def _select(
        self, schema: TableSchema, event: RowsEvent, wanted: list[int], keys: Sequence[Any]
    ) -> list[tuple[Any, ...]]:
        columns = ", ".join(selected(schema.columns[i]) for i in wanted)
        sql, params = _by_keys(schema, keys)
        sql = f"SELECT {columns} FROM {qualified(schema.database, schema.table)} WHERE {sql} LOCK IN SHARE MODE"
        for attempt in range(ATTEMPTS):
            try:
                return self._fetch(sql, params)
            except MySQLdb.OperationalError as exc:
                if exc.args[0] == _UNKNOWN_COLUMN:
                    raise partial_images_stop(
                        event,
                        f"the source's table has changed since ({exc.args[1]}): what the column held at that "
                        "point can no longer be read",
                    ) from exc
                if exc.args[0] not in _RETRIED or attempt + 1 == ATTEMPTS:
                    raise SourceError(
                        f"reading the columns the rows event of {event.table_id} at binlog position {event.start} "
                        f"left out failed: {exc.args[-1]}"
                    ) from exc
        raise AssertionError("unreachable")

    def _fetch(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        if self._conn is None:
            self._conn = connect_scan(self._endpoint)
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        except UnicodeDecodeError:  # a string holds surrogates (charsets): decoded in Python
            with decoding_surrogates(self._conn), self._conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())


def _overlaid(after: Row, before: Row | None, from_before: frozenset[int]) -> Row:
    """An update's after image with the columns its statement did not set (unchanged)
    taken from its before image."""
    if before is None or not from_before:
        return after
    return tuple(before[i] if i in from_before else value for i, value in enumerate(after))


def _by_keys(schema: TableSchema, keys: Sequence[Any]) -> tuple[str, list[Any]]:
    names = [quote(name) for name in schema.row_key]
    if len(names) == 1:
        return f"{names[0]} IN ({', '.join(['%s'] * len(keys))})", list(keys)
    one = "(" + ", ".join(["%s"] * len(names)) + ")"
    return f"({', '.join(names)}) IN ({', '.join([one] * len(keys))})", [v for key in keys for v in key]
