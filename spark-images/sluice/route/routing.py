"""The definition's `route` and `transform` blocks, as one value (route/table_routing
applies them to the captured tables)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sluice.route.route_rule import TableRouter

if TYPE_CHECKING:
    from sluice.transform.transform_rule import TransformRule


@dataclass(frozen=True)
class Routing:
    """The definition's `route` and `transform` blocks."""

    router: TableRouter = TableRouter()
    transforms: tuple[TransformRule, ...] = ()
    texts: tuple[Any, Any] = (None, None)  # the blocks as written, for the state's identity

    @property
    def active(self) -> bool:
        return bool(self.router.rules or self.transforms)

    def identity(self) -> dict[str, str]:
        """What the state's progress depends on (pipeline_runner checks it on every run)."""
        if not self.active:
            return {}
        route, transform = self.texts
        return {
            "route": json.dumps({"mode": self.router.mode, "rules": route or []}, sort_keys=True),
            "transform": json.dumps(transform or [], sort_keys=True),
        }
