"""Reading the replication protocol's and the binlog's integer encodings from bytes."""

from __future__ import annotations


def length_coded(data: bytes, at: int) -> tuple[int, int]:
    """A length-coded integer at `at`, and where what follows it begins."""
    first = data[at]
    if first < 251:
        return first, at + 1
    width = {252: 2, 253: 3, 254: 8}[first]
    return int.from_bytes(data[at + 1 : at + 1 + width], "little"), at + 1 + width
