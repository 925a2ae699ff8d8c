"""A merged table's key must name one source row: the source tables routed into it must not
share a key value, or a row of one would overwrite (and its delete remove) a row of
another. A key extended by the metadata columns that tell the members apart
(`__table_name__`, `__schema_name__`, through a transform's primary-keys) is unique by
construction; any other is checked against the source's rows before the snapshot."""

from __future__ import annotations

import logging
import time
from typing import Any

from sluice.errors import DefinitionError
from sluice.route.table_routing import TableRouting
from sluice.source.sql import qualified, quote

log = logging.getLogger(__name__)
MEMBER_NAMES = {"__table_name__": lambda t: t.split(".", 1)[1], "__schema_name__": lambda t: t.split(".", 1)[0]}


def check_merged_keys(conn: Any, routing: TableRouting) -> None:
    for sink_id, members in routing.members.items():
        if len(members) > 1:
            _check(conn, routing, sink_id, members)


def _check(conn: Any, routing: TableRouting, sink_id: str, members: list[str]) -> None:
    sink = routing.sinks[sink_id]
    advice = (
        f"add __table_name__ (and __schema_name__ where tables of several databases share names) to the projection "
        f"and to primary-keys of a transform of {', '.join(members)}"
    )
    if not sink.primary_key:
        raise DefinitionError(f"route: the tables merged into {sink_id} have no key; {advice}")
    if _told_apart(routing, sink_id, sink.primary_key, members):
        return
    columns: list[list[str]] = []
    for member in members:
        table = routing.route_into(member, sink_id)
        passthrough = table.transform.passthrough if table.transform else {n: n for n in sink.primary_key}
        missing = [k for k in sink.primary_key if k not in passthrough]
        if missing:
            raise DefinitionError(
                f"route: key {', '.join(sink.primary_key)} of {sink_id} is computed in {member} ({', '.join(missing)}),"
                f" so Sluice cannot check that it is unique across the merged tables; {advice}"
            )
        columns.append([passthrough[k] for k in sink.primary_key])
    started = time.monotonic()
    key = ", ".join(f"k{i}" for i in range(len(sink.primary_key)))
    union = " UNION ALL ".join(
        f"SELECT {', '.join(f'{quote(c)} AS k{i}' for i, c in enumerate(cols))} FROM {qualified(*member.split('.', 1))}"
        for member, cols in zip(members, columns, strict=True)
    )
    with conn.cursor() as cur:
        cur.execute(f"SELECT {key} FROM ({union}) AS merged GROUP BY {key} HAVING COUNT(*) > 1 LIMIT 1")
        shared = cur.fetchone()
        if shared is None:
            log.info(
                "%s: the key is unique across %d merged tables (%.1fs)",
                sink_id,
                len(members),
                time.monotonic() - started,
            )
            return
        holders = []
        for member, cols in zip(members, columns, strict=True):
            where = " AND ".join(f"{quote(c)} <=> %s" for c in cols)
            cur.execute(f"SELECT 1 FROM {qualified(*member.split('.', 1))} WHERE {where} LIMIT 1", list(shared))
            if cur.fetchone() is not None:
                holders.append(member)
    value = ", ".join(f"{name}={v!r}" for name, v in zip(sink.primary_key, shared, strict=True))
    raise DefinitionError(
        f"route: {' and '.join(holders[:2])} both hold {value}, and both are merged into {sink_id} keyed by "
        f"{', '.join(sink.primary_key)}: their rows would overwrite each other; {advice}"
    )


def _told_apart(routing: TableRouting, sink_id: str, key: tuple[str, ...], members: list[str]) -> bool:
    """Whether the key's metadata columns give each member's rows their own values."""
    names: list[tuple[str, ...]] = []
    for member in members:
        transform = routing.route_into(member, sink_id).transform
        if transform is None:
            return False
        metadata = transform.metadata_columns()
        told = tuple(MEMBER_NAMES[metadata[k]](member) for k in key if metadata.get(k) in MEMBER_NAMES)
        names.append(told)
    return all(names) and len(set(names)) == len(names)
