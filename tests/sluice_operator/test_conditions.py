"""Conditions say what the phase means, with why; their transition time moves only when
their status does."""

from __future__ import annotations

from datetime import datetime, timezone

from sluice_operator.conditions import for_phase, merge
from sluice_operator.crd import custom_resource_definition
from tests.harness.crd_validation import violations

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
T1 = datetime(2026, 11, 22, 10, 5, tzinfo=timezone.utc)


def _by_type(conditions: list[dict]) -> dict[str, dict]:
    return {c["type"]: c for c in conditions}


def test_each_phase_sets_the_conditions_a_user_and_argo_cd_read():
    streaming = _by_type(merge([], for_phase("Streaming"), generation=3, now=T0))
    assert (streaming["Ready"]["status"], streaming["Progressing"]["status"], streaming["Degraded"]["status"]) == (
        "True",
        "False",
        "False",
    )
    waiting = _by_type(merge([], for_phase("SchemaChangePaused", "approve mysql-bin.000003:1234"), 3, T0))
    assert waiting["SchemaChangePending"] == {
        "type": "SchemaChangePending",
        "status": "True",
        "reason": "SchemaChangePaused",
        "message": "approve mysql-bin.000003:1234",
        "observedGeneration": 3,
        "lastTransitionTime": "2026-11-22T10:00:00Z",
    }
    failed = _by_type(merge([], for_phase("Failed", "source.password: access denied"), 3, T0))
    assert failed["Degraded"]["status"] == "True" and failed["Degraded"]["message"] == "source.password: access denied"
    assert failed["Ready"]["status"] == "False"


def test_the_transition_time_moves_only_with_the_status():
    first = merge([], for_phase("Snapshotting"), generation=1, now=T0)
    again = _by_type(merge(first, for_phase("Snapshotting"), generation=2, now=T1))
    assert again["Progressing"]["lastTransitionTime"] == "2026-11-22T10:00:00Z"
    assert again["Progressing"]["observedGeneration"] == 2
    done = _by_type(merge(first, for_phase("Streaming"), generation=2, now=T1))
    assert done["Progressing"]["lastTransitionTime"] == "2026-11-22T10:05:00Z"
    assert done["Ready"]["lastTransitionTime"] == "2026-11-22T10:05:00Z"


def test_conditions_fit_the_crds_status_schema():
    (version,) = custom_resource_definition()["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    status = {"phase": "Streaming", "observedGeneration": 2, "conditions": merge([], for_phase("Streaming"), 2, T0)}
    assert violations(schema, status) == []
