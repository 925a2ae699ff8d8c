"""Finding a batch's keys in a data file's key columns: every row of a key (a file another
writer made may hold one twice), in position order, whatever the key's type; positions the
file's deletes delete already are left out."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sluice.sink.lakehouse.key_positions import KeyedFile, KeyPositions


def _file(path: str, keys: pa.Table, deleted: list[int] | None = None, bounds=None) -> KeyedFile:
    return KeyedFile(path, bounds, lambda: keys, lambda: None if deleted is None else np.array(deleted))


def _find(files: list[KeyedFile], keys: pa.Table) -> dict[str, list[int]]:
    return {path: positions.tolist() for path, positions in KeyPositions().find(files, keys).items()}


def test_an_integer_key_is_found_at_each_of_its_positions():
    held = pa.table({"id": pa.array([40, 10, 30, 10, 20], pa.int64())})
    keys = pa.table({"id": pa.array([10, 30, 99, None], pa.int64())})
    assert _find([_file("a", held)], keys) == {"a": [1, 2, 3]}


def test_positions_deleted_already_are_left_out_and_a_file_without_a_key_is_absent():
    held = pa.table({"id": pa.array(range(100), pa.int64())})
    keys = pa.table({"id": pa.array([5, 6, 7], pa.int64())})
    other = pa.table({"id": pa.array([500, 600], pa.int64())})
    assert _find([_file("a", held, deleted=[6]), _file("b", other)], keys) == {"a": [5, 7]}


def test_keys_of_another_integer_width_or_a_text_or_composite_key_are_found_all_the_same():
    held = pa.table({"id": pa.array([3, 1, 2], pa.int32())})
    assert _find([_file("a", held)], pa.table({"id": pa.array([2, 3], pa.int64())})) == {"a": [0, 2]}
    text = pa.table({"k": ["b", "a", "c"]})
    assert _find([_file("t", text)], pa.table({"k": ["c", "a"]})) == {"t": [1, 2]}
    pairs = pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"]})
    assert _find([_file("p", pairs)], pa.table({"a": [1, 2], "b": ["y", "x"]})) == {"p": [1, 2]}


def test_a_file_whose_bounds_hold_none_of_the_keys_is_not_read():
    def unread() -> pa.Table:
        raise AssertionError("a file outside the keys' bounds was read")

    keys = pa.table({"id": pa.array([5, 50], pa.int64())})
    files = [KeyedFile("far", (100, 200), unread, lambda: None), _file("near", pa.table({"id": [50]}), bounds=(40, 60))]
    assert _find(files, keys) == {"near": [0]}
