"""Whether a state belongs to the definition a run was started with: the pipeline's name,
the source, the sink and the captured tables as the state's progress describes them. A
change that would make the plan, the watermarks or the offsets mean something else is
refused with what to do; the changes a streaming pipeline can take (tables joining or
leaving, a failover to a promoted server by GTID, rules for newly captured tables) pass."""

from __future__ import annotations

from sluice.errors import SluiceError
from sluice.pipeline.definition import PipelineDefinition
from sluice.route.routing import ROUTE_KEY, TRANSFORM_KEY, Routing
from sluice.state.pipeline_state import PipelineState

SOURCE_ADDRESS = ("source.hostname", "source.port")
CAPTURE = ("source.tables", "source.tables.exclude")  # may change once the pipeline streams


def check_pipeline_identity(definition: PipelineDefinition, state: PipelineState, where: str, fresh_start: str) -> bool:
    """A state belongs to the definition it was made for: refuse a changed one that would
    make its plan, watermarks or offsets describe something else (`where` the state is
    kept, `fresh_start` how to begin again). True if the tables captured changed, which a
    pipeline streaming past its snapshot takes up (tables join or leave the capture)."""
    capture_changed = False
    name = state.pipeline
    if name != definition.name:
        raise SluiceError(
            f"{where} belongs to pipeline '{name}', not '{definition.name}'; give each pipeline its own state"
        )
    saved = state.definition
    for key, value in definition.state_identity.items():
        if saved.get(key, value) == value:
            continue
        if key in SOURCE_ADDRESS and _resumes_by_gtid(state):
            saved[key] = value  # a failover: the set means the same on the promoted server
            continue
        if key in (ROUTE_KEY, TRANSFORM_KEY):
            _check_routing_change(definition, state, saved, where, fresh_start)
            continue
        if key in CAPTURE and _streams_past_the_snapshot(state):
            saved[key] = value  # tables join or leave the capture: _change_capture
            capture_changed = True
            continue
        raise SluiceError(
            f"{key} changed from '{saved[key]}' to '{value}' since {where} was "
            "written; its progress belongs to the old value: put the old value back, or "
            f"{fresh_start} into an empty target"
            + (
                " (another source address is taken once the pipeline streams by GTID)"
                if key in SOURCE_ADDRESS
                else " (the tables may change once the pipeline streams past its snapshot)"
                if key in CAPTURE
                else ""
            )
        )
    return capture_changed


def _check_routing_change(
    definition: PipelineDefinition, state: PipelineState, saved: dict[str, str], where: str, fresh_start: str
) -> None:
    """Rules may change where every table already captured keeps its target table and
    its transform (a rule added for tables joining the capture is the common case): the
    rows in the targets stay the query's. Any other change is refused naming the table."""
    later = definition.routing
    changes = Routing.from_identity(saved).changes_for(later, state.tables or {})
    if changes:
        raise SluiceError(
            f"route/transform: {'; '.join(changes[:3])}{' ...' if len(changes) > 3 else ''} since "
            f"{where} was written; its target holds the old query's rows: put the old rules back, or "
            f"{fresh_start} into an empty target"
        )
    saved.update(later.identity())


def _streams_past_the_snapshot(state: PipelineState) -> bool:
    return state.binlog is not None and state.snapshot is None and state.stop_at is None


def _resumes_by_gtid(state: PipelineState) -> bool:
    """Past the snapshot's watermarks with a GTID set: the position means the same on
    every server of the replication topology."""
    binlog = state.binlog
    return bool(binlog and binlog.offset.gtid and not binlog.watermarks and state.stop_at is None)
