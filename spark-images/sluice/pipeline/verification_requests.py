"""What a CdcPipeline's spec asks of its streaming driver: verification and resnapshots
(carried out by verify/online). Plain values, so the status store and the operator's image
read them without the database drivers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VerificationSpec:
    id: str = ""
    interval_seconds: int | None = None
    repair: bool = False
    tables: tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> VerificationSpec:
        interval = spec.get("intervalSeconds")
        return cls(
            str(spec.get("id", "")),
            None if interval is None else int(interval),
            bool(spec.get("repair", False)),
            tuple(str(t) for t in spec.get("tables") or ()),
        )


@dataclass(frozen=True)
class ResnapshotRequest:
    id: str
    tables: tuple[str, ...]
    where: str = ""  # only the rows matching it at the source, by key


@dataclass(frozen=True)
class Requests:
    """All a spec asks, read at once (one GET of the CdcPipeline per look)."""

    verification: VerificationSpec | None
    resnapshots: tuple[ResnapshotRequest, ...]

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Requests:
        verification = spec.get("verification")
        return cls(
            None if verification is None else VerificationSpec.from_spec(verification),
            tuple(
                ResnapshotRequest(str(r["id"]), tuple(str(t) for t in r.get("tables") or ()), str(r.get("where", "")))
                for r in spec.get("resnapshots") or []
            ),
        )
