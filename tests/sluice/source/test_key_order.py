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


def test_strings_under_a_collation_are_placed_by_the_server_among_many_boundaries(mariadb):
    """A binary search on the server: each key's chunk as the collation orders it ('é' = 'E',
    case ignored, trailing spaces ignored), checked against the server's own ORDER BY."""
    email = Column("email", "varchar", "varchar(40)", False, collation="utf8mb4_unicode_ci")
    words = [f"{c}{n}" for c in ("a", "B", "é", "E", "z", "Z ") for n in range(40)]
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT w FROM (" + " UNION ALL ".join(["SELECT %s AS w"] * len(words)) + ") t "
                "ORDER BY w COLLATE utf8mb4_unicode_ci, w COLLATE utf8mb4_bin",
                words,
            )
            ordered = [row[0] for row in cur.fetchall()]
        boundaries = ordered[7::9]  # 26 chunks
        placed = key_order_for(email, conn).chunk_indexes([*words, None], boundaries)
    finally:
        conn.close()

    def expected(word: str) -> int:  # boundaries at or before the word in the server's order
        return sum(1 for b in boundaries if ordered.index(b) <= ordered.index(word) or _same(b, word))

    def _same(a: str, b: str) -> bool:
        return a.rstrip().casefold().replace("é", "e") == b.rstrip().casefold().replace("é", "e")

    assert placed == [*map(expected, words), 0]
