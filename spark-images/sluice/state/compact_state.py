"""The pipeline state's compact form, for a store with a size limit: the CdcPipeline's
status lives in etcd, which refuses objects over 1.5 MiB, and a snapshot plan holds one
record per split.

Per table, the plan's integer chunk boundaries, each split's high watermark (binlog file
and position) and row count are kept as packed integer columns: zigzag deltas, varints,
zlib, base64. Evenly spread keys and a reader's steadily growing positions compress to a
few bytes a split; 100,000 splits of a BIGINT key take a few hundred KB. The binlog
split's watermarks repeat the plan's boundaries and high watermarks, so they are stored as
a reference to it. Boundaries of other types (strings, dates) stay a plain list: such a
plan is bounded by the number of chunks, which `scan.incremental.snapshot.chunk.size`
sets. `expand(compact(doc)) == doc` for every state document.
"""

from __future__ import annotations

import base64
import copy
import zlib
from collections.abc import Iterable
from typing import Any


def compact(document: dict[str, Any]) -> dict[str, Any]:
    """The state document (PipelineState.to_json) in compact form."""
    result = copy.deepcopy(document)
    snapshot = result.get("snapshot")
    if snapshot is None:
        return result
    plan: dict[str, dict[str, Any]] = {}
    tables: dict[str, list[dict[str, Any]]] = {}
    for split in snapshot["splits"]:
        tables.setdefault(split["table"], []).append(split)
    if any(not _contiguous(splits) for splits in tables.values()):
        return result  # a plan Sluice did not make: kept as it is
    for table, splits in tables.items():
        ids = [f"{table}:{s['index']}" for s in splits]
        finished = [snapshot["finished"].get(i) for i in ids]
        plan[table] = {
            "boundaries": _boundaries([s["end"] for s in splits[:-1]]),
            "hws": _offsets([f["hw"] if f else None for f in finished]),
            "rows": _pack([f.get("rows", 0) if f else 0 for f in finished]),
        }
    snapshot["plan"] = plan
    del snapshot["splits"], snapshot["finished"]
    watermarks = (result.get("binlog") or {}).get("watermarks", {})
    for table, marks in watermarks.items():
        if table in plan and marks == _watermarks(plan[table]):
            watermarks[table] = {"fromPlan": True}
    return result


def expand(document: dict[str, Any]) -> dict[str, Any]:
    """The state document a compact one stands for."""
    result = copy.deepcopy(document)
    snapshot = result.get("snapshot")
    if snapshot is None or "plan" not in snapshot:
        return result
    splits: list[dict[str, Any]] = []
    finished: dict[str, Any] = {}
    watermarks = (result.get("binlog") or {}).get("watermarks", {})
    for table, packed in snapshot.pop("plan").items():
        inner = _unboundaries(packed["boundaries"])
        edges = [None, *inner, None]
        hws = _unoffsets(packed["hws"])
        rows = _unpack(packed["rows"])
        for index in range(len(edges) - 1):
            splits.append({"table": table, "index": index, "start": edges[index], "end": edges[index + 1]})
            if hws[index] is not None:
                finished[f"{table}:{index}"] = {"hw": hws[index], "rows": rows[index]}
        if watermarks.get(table) == {"fromPlan": True}:
            watermarks[table] = _watermarks(packed)
    snapshot["splits"], snapshot["finished"] = splits, finished
    return result


def _contiguous(splits: list[dict[str, Any]]) -> bool:
    """Splits 0..n-1 in order, each starting where the one before ends (what the chunk
    splitter makes)."""
    return (
        [s["index"] for s in splits] == list(range(len(splits)))
        and splits[0]["start"] is None
        and splits[-1]["end"] is None
        and all(a["end"] == b["start"] and a["end"] is not None for a, b in zip(splits, splits[1:], strict=False))
    )


def _watermarks(packed: dict[str, Any]) -> dict[str, Any]:
    """The binlog split's record of a table whose splits are all finished."""
    return {"boundaries": _unboundaries(packed["boundaries"]), "hws": _unoffsets(packed["hws"])}


def _boundaries(values: list[Any]) -> Any:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return {"ints": _pack(values)}
    return {"values": values}


def _unboundaries(packed: dict[str, Any]) -> list[Any]:
    return _unpack(packed["ints"]) if "ints" in packed else list(packed["values"])


def _offsets(offsets: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Binlog offsets as a file table and packed columns; None (unfinished) is file -1."""
    files: list[str] = []
    file_index: list[int] = []
    positions: list[int] = []
    extra: dict[str, dict[str, Any]] = {}  # row, gtid, transaction, where an offset has them
    for i, offset in enumerate(offsets):
        if offset is None:
            file_index.append(-1)
            positions.append(0)
            continue
        if offset["file"] not in files:
            files.append(offset["file"])
        file_index.append(files.index(offset["file"]))
        positions.append(offset["pos"])
        rest = {k: v for k, v in offset.items() if k not in ("file", "pos")}
        if rest:
            extra[str(i)] = rest
    packed: dict[str, Any] = {"files": files, "file": _pack(file_index), "pos": _pack(positions)}
    if extra:
        packed["extra"] = extra
    return packed


def _unoffsets(packed: dict[str, Any]) -> list[dict[str, Any] | None]:
    files = packed["files"]
    extra = packed.get("extra", {})
    offsets: list[dict[str, Any] | None] = []
    for i, (index, pos) in enumerate(zip(_unpack(packed["file"]), _unpack(packed["pos"]), strict=True)):
        offsets.append(None if index < 0 else {"file": files[index], "pos": pos, **extra.get(str(i), {})})
    return offsets


def _pack(values: Iterable[int]) -> str:
    """Zigzag deltas as varints, zlib, base64."""
    out = bytearray()
    previous = 0
    for value in values:
        delta = value - previous
        previous = value
        zigzag = delta * 2 if delta >= 0 else -delta * 2 - 1
        while zigzag >= 0x80:
            out.append((zigzag & 0x7F) | 0x80)
            zigzag >>= 7
        out.append(zigzag)
    return base64.b64encode(zlib.compress(bytes(out), 9)).decode()


def _unpack(text: str) -> list[int]:
    data = zlib.decompress(base64.b64decode(text))
    values: list[int] = []
    previous = shift = zigzag = 0
    for byte in data:
        zigzag |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        delta = zigzag >> 1 if not zigzag & 1 else -((zigzag + 1) >> 1)
        previous += delta
        values.append(previous)
        shift = zigzag = 0
    return values
