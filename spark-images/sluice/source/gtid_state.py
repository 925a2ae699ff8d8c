"""The GTIDs executed up to a point of the binlog, kept as the reader passes transactions.

Every resume point then carries its GTID set as well as its file/position. File/position
only mean something on the server that wrote them; a GTID set means the same on every
server of a replication topology, so a pipeline can resume on a promoted replica.
"""

from __future__ import annotations

import re
from typing import Protocol


class GtidState(Protocol):
    def add(self, gtid: str) -> None: ...

    def __str__(self) -> str: ...


class MariadbGtidPosition:
    """MariaDB's form: the last domain-server-sequence applied in each replication domain."""

    def __init__(self, text: str) -> None:
        self._last: dict[int, str] = {}
        for gtid in filter(None, (part.strip() for part in text.split(","))):
            self.add(gtid)

    def add(self, gtid: str) -> None:
        self._last[int(gtid.split("-", 1)[0])] = gtid

    def __str__(self) -> str:
        if len(self._last) == 1:  # one replication domain, the usual case: made for every transaction
            return next(iter(self._last.values()))
        return ",".join(self._last[domain] for domain in sorted(self._last))


class MysqlGtidSet:
    """MySQL's form: per source uuid (and, from 8.3, per tag), the closed intervals of
    transaction numbers. `uuid:1-5:etl:1-3` holds untagged 1-5 and etl's 1-3."""

    def __init__(self, text: str) -> None:
        self._intervals: dict[tuple[str, str], list[list[int]]] = {}
        for part in filter(None, (p.strip() for p in text.replace("\n", "").split(","))):
            sid, *items = part.split(":")
            tag = ""
            for item in items:
                if not item[:1].isdigit():  # a tag: the intervals after it are its own
                    tag = _tag(item, part)
                    continue
                first, _, last = item.partition("-")
                self._add_range((sid.lower(), tag), int(first), int(last or first))

    def intervals(self) -> dict[tuple[str, str], list[tuple[int, int]]]:
        """Per (source uuid, tag), its closed intervals."""
        return {key: [(a, b) for a, b in intervals] for key, intervals in self._intervals.items()}

    @property
    def tags(self) -> list[str]:
        return sorted({tag for (_, tag) in self._intervals if tag})

    def add(self, gtid: str) -> None:
        sid, *tag, number = gtid.split(":")
        self._add_range((sid.lower(), _tag(tag[0], gtid) if tag else ""), int(number), int(number))

    def _add_range(self, key: tuple[str, str], first: int, last: int) -> None:
        intervals = self._intervals.setdefault(key, [])
        if intervals and intervals[-1][1] + 1 == first:  # the usual case: the next number
            intervals[-1][1] = last
            return
        merged: list[list[int]] = []
        for interval in sorted([*intervals, [first, last]]):
            if merged and interval[0] <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], interval[1])
            else:
                merged.append(list(interval))
        self._intervals[key] = merged

    def __str__(self) -> str:
        """As MySQL prints it: by source, its untagged intervals, then each tag's."""
        sources: dict[str, list[str]] = {}
        for (sid, tag), intervals in sorted(self._intervals.items()):
            numbers = "".join(f":{a}" if a == b else f":{a}-{b}" for a, b in intervals)
            sources.setdefault(sid, []).append(f":{tag}{numbers}" if tag else numbers)
        return ",".join(sid + "".join(parts) for sid, parts in sources.items())


def _tag(text: str, where: str) -> str:
    """A GTID tag as MySQL keeps it: lower case; up to 32 letters, digits and underscores,
    not beginning with a digit."""
    tag = text.strip().lower()
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,31}", tag):
        raise ValueError(f"'{text}' in the GTID set {where!r} is neither a transaction range nor a tag")
    return tag


def gtid_state(text: str, mariadb: bool) -> GtidState:
    return MariadbGtidPosition(text) if mariadb else MysqlGtidSet(text)


def contains(outer: str, inner: str) -> bool:
    """Whether every transaction of the GTID set `inner` is in `outer` (MariaDB's positions:
    per domain, a sequence at least as far; MySQL's sets: per source, covering intervals)."""
    if ":" in outer or ":" in inner:
        have, want = MysqlGtidSet(outer)._intervals, MysqlGtidSet(inner)._intervals
        return all(
            any(a <= first and last <= b for a, b in have.get(sid, ()))
            for sid, ranges in want.items()
            for first, last in ranges
        )
    reached = {domain: int(gtid.rsplit("-", 1)[1]) for domain, gtid in MariadbGtidPosition(outer)._last.items()}
    return all(
        int(gtid.rsplit("-", 1)[1]) <= reached.get(domain, -1)
        for domain, gtid in MariadbGtidPosition(inner)._last.items()
    )
