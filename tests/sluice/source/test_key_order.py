"""Chunk-key values placed into chunks in the source's own order, whatever form a row or a
target gives them in."""

from __future__ import annotations

from sluice.source.key_order import key_order_for
from sluice.source.schema import Column

LEVEL = Column("level", "enum", "enum('zeta','alpha','it''s')", False, collation="utf8mb4_general_ci")


def test_an_enum_is_placed_by_its_members_index_not_its_text():
    assert LEVEL.members == ("zeta", "alpha", "it's")
    order = key_order_for(LEVEL, conn=None)  # no server asked: the index is in the type
    # Boundaries 2 and 3: chunk 0 holds 'zeta' (and '' and NULL), 1 'alpha', 2 "it's".
    assert order.chunk_indexes(["alpha", "zeta", "it's", "", None, "ALPHA"], [2, 3]) == [1, 0, 2, 0, 0, 1]


def test_a_bit_is_placed_by_its_value():
    flags = Column("f", "bit", "bit(10)", False)
    assert flags.chunkable and flags.keyed_by_number and flags.orders_like_python
    assert key_order_for(flags, conn=None).chunk_indexes([0, 5, 700], [5, 512]) == [0, 1, 2]
