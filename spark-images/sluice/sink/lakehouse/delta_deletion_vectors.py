"""Delta Lake deletion vectors, as the protocol's appendix defines them: the rows a data
file no longer holds, as a 64-bit RoaringBitmap (magic number, then the portable format),
stored in a `deletion_vector_<uuid>.bin` file at the table's root (a version byte, then
each vector's size, bytes and CRC-32, big-endian) and described in the file's `add` action.
delta-rs writes none (1.6: its DELETE and MERGE rewrite files), but reads them."""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow.fs as pafs
from pyroaring import BitMap

MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUES = {c: i for i, c in enumerate(_Z85)}


def z85_encode(data: bytes) -> str:
    """ZeroMQ's Base85 (the protocol's choice: it needs no escaping in JSON); `data` a multiple of 4 bytes."""
    out = []
    for (word,) in struct.iter_unpack(">I", data):
        chars = []
        for _ in range(5):
            word, digit = divmod(word, 85)
            chars.append(_Z85[digit])
        out.append("".join(reversed(chars)))
    return "".join(out)


def z85_decode(text: str) -> bytes:
    words = []
    for start in range(0, len(text), 5):
        word = 0
        for char in text[start : start + 5]:
            word = word * 85 + _Z85_VALUES[char]
        words.append(struct.pack(">I", word))
    return b"".join(words)


def serialize(positions: np.ndarray) -> bytes:
    """A vector's bytes: the magic number, then a portable 64-bit bitmap (one bucket per
    high 32 bits, ascending, each a portable 32-bit RoaringBitmap)."""
    positions = np.unique(positions.astype(np.uint64))
    highs = positions >> np.uint64(32)
    parts = [struct.pack("<I", MAGIC)]
    buckets = np.unique(highs)
    parts.append(struct.pack("<Q", len(buckets)))
    for high in buckets:
        low = (positions[highs == high] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        bitmap = BitMap(low)
        bitmap.run_optimize()
        parts.append(struct.pack("<I", int(high)) + bitmap.serialize())
    return b"".join(parts)


def deserialize(data: bytes) -> np.ndarray:
    """A vector's positions, ascending."""
    (magic,) = struct.unpack_from("<I", data, 0)
    if magic != MAGIC:
        raise ValueError(f"not a deletion vector (magic number {magic}, expected {MAGIC})")
    (count,) = struct.unpack_from("<Q", data, 4)
    at, found = 12, []
    for _ in range(count):
        (high,) = struct.unpack_from("<I", data, at)
        bitmap = BitMap.deserialize(data[at + 4 :])
        at += 4 + len(bitmap.serialize())  # (containers kept as read: the same bytes)
        found.append(np.array(bitmap.to_array(), dtype=np.int64) + (high << 32))
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def write_vectors(filesystem: pafs.FileSystem, root: str, vectors: Sequence[np.ndarray]) -> list[dict[str, Any]]:
    """The vectors in one new file at the table's root, and the descriptor of each."""
    name = uuid.uuid4()
    body, descriptors = bytearray(b"\x01"), []
    for positions in vectors:
        data = serialize(positions)
        descriptors.append(
            {
                "storageType": "u",
                "pathOrInlineDv": z85_encode(name.bytes),
                "offset": len(body),
                "sizeInBytes": len(data),
                "cardinality": int(len(np.unique(positions))),
            }
        )
        body += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    with filesystem.open_output_stream(f"{root}/deletion_vector_{name}.bin") as stream:
        stream.write(bytes(body))
    return descriptors


def read_vector(filesystem: pafs.FileSystem, root: str, descriptor: Mapping[str, Any]) -> np.ndarray:
    """The positions a descriptor of any storage type holds, its checksum verified."""
    kind, where = descriptor["storageType"], descriptor["pathOrInlineDv"]
    if kind == "i":
        return deserialize(z85_decode(where)[: descriptor["sizeInBytes"]])
    if kind == "u":
        prefix, encoded = where[:-20], where[-20:]
        path = f"{root}/{prefix + '/' if prefix else ''}deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
    elif kind == "p":
        filesystem, path = pafs.FileSystem.from_uri(where)
    else:
        raise ValueError(f"deletion vector storage type {kind!r} is not one of the protocol's (u, i, p)")
    with filesystem.open_input_file(path) as stream:
        stream.seek(descriptor.get("offset") or 0)
        (size,) = struct.unpack(">I", stream.read(4))
        data = stream.read(size)
        (checksum,) = struct.unpack(">I", stream.read(4))
    if size != descriptor["sizeInBytes"] or zlib.crc32(data) != checksum:
        raise ValueError(f"deletion vector {path} at {descriptor.get('offset')}: its size or checksum is wrong")
    return deserialize(data)


def unique_id(descriptor: Mapping[str, Any] | None) -> str:
    """The protocol's derived uniqueId (a file's add and remove are keyed by path and it)."""
    if not descriptor:
        return ""
    offset = descriptor.get("offset")
    base = f"{descriptor['storageType']}{descriptor['pathOrInlineDv']}"
    return base if offset is None else f"{base}@{offset}"
