"""The Argo CD health check and actions for CdcPipeline, run as Argo CD runs them: Lua 5.1
(lupa's lua51, closest to Argo CD's gopher-lua) with the object as the global `obj`, against
every case of health_test.yaml and action_test.yaml (Argo CD's own test formats), and
against the status the operator really writes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from lupa import lua51

from sluice.coordinator.schema_change import SchemaChangeInFlight, Step
from sluice.event.schema_change import AddColumn
from sluice.source.offset import BinlogOffset
from sluice.source.schema import Column
from sluice.state.compact_state import compact
from sluice_operator.observe import Observation
from sluice_operator.reconcile import reconcile
from tests.harness.crd_validation import violations
from tests.harness.states import bigint_edges, planned_state
from tests.sluice_operator.test_reconcile import SECRETS, running
from tests.sluice_operator.test_spark_application import CDC_PIPELINE

ROOT = Path(__file__).parents[2]
CUSTOMIZATION = ROOT / "charts" / "argocd" / "resource_customizations" / "sluice.io" / "CdcPipeline"
CRD = yaml.safe_load((ROOT / "crds" / "cdcpipelines.sluice.io.yaml").read_text())
SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def to_lua(runtime: Any, value: Any) -> Any:
    if isinstance(value, dict):
        return runtime.table_from({k: to_lua(runtime, v) for k, v in value.items()})
    if isinstance(value, list):
        return runtime.table_from([to_lua(runtime, v) for v in value])
    return value


def from_lua(value: Any) -> Any:
    if lua51.lua_type(value) != "table":
        return value
    items = dict(value.items())
    if items and all(isinstance(k, int) for k in items) and sorted(items) == list(range(1, len(items) + 1)):
        return [from_lua(items[i]) for i in range(1, len(items) + 1)]
    return {k: from_lua(v) for k, v in items.items()}


def run(script: Path, obj: dict[str, Any]) -> Any:
    runtime = lua51.LuaRuntime(unpack_returned_tuples=False)
    runtime.globals().obj = to_lua(runtime, copy.deepcopy(obj))
    return from_lua(runtime.execute(script.read_text()))


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


HEALTH_TESTS = load(CUSTOMIZATION / "health_test.yaml")["tests"]
ACTIONS = load(CUSTOMIZATION / "actions" / "action_test.yaml")


@pytest.mark.parametrize("case", HEALTH_TESTS, ids=[Path(t["inputPath"]).stem for t in HEALTH_TESTS])
def test_health_of_every_testdata_case(case):
    obj = load(CUSTOMIZATION / case["inputPath"])
    assert run(CUSTOMIZATION / "health.lua", obj) == case["healthStatus"]


def test_every_testdata_file_is_a_valid_cdc_pipeline_and_has_a_case():
    files = sorted((CUSTOMIZATION / "testdata").glob("*.yaml")) + sorted(
        (CUSTOMIZATION / "actions/testdata").glob("*.yaml")
    )
    for path in files:
        assert violations(SCHEMA, load(path)) == [], path
    assert {Path(t["inputPath"]).name for t in HEALTH_TESTS} == {
        p.name for p in (CUSTOMIZATION / "testdata").glob("*.yaml")
    }


@pytest.mark.parametrize("case", ACTIONS["discoveryTests"], ids=lambda c: Path(c["inputPath"]).stem)
def test_action_discovery(case):
    found = run(CUSTOMIZATION / "actions" / "discovery.lua", load(CUSTOMIZATION / "actions" / case["inputPath"]))
    assert sorted(({"name": k, **v} for k, v in found.items()), key=lambda a: a["name"]) == case["result"]


@pytest.mark.parametrize("case", ACTIONS["actionTests"], ids=lambda c: c["action"])
def test_actions(case):
    before = load(CUSTOMIZATION / "actions" / case["inputPath"])
    after = run(CUSTOMIZATION / "actions" / case["action"] / "action.lua", before)
    assert after == load(CUSTOMIZATION / "actions" / case["expectedOutputPath"])


def test_the_operators_own_status_while_a_change_awaits_approval_reads_suspended_with_the_id():
    state = planned_state(bigint_edges(4), finish=4)
    state.binlog = state.snapshot.binlog_split()
    event = AddColumn("shop.orders", Column("note", "varchar", "varchar(20)", True))
    state.schema_change = SchemaChangeInFlight(
        "mysql-bin.000003:4711",
        BinlogOffset("mysql-bin.000003", 4711),
        BinlogOffset("mysql-bin.000003", 4800),
        "ALTER TABLE orders ADD COLUMN note VARCHAR(20)",
        (event,),
        Step.AWAITING_APPROVAL,
    )
    state.phase = "SchemaChangePaused"
    cr = copy.deepcopy(CDC_PIPELINE)
    cr["metadata"]["generation"] = 1
    cr["status"] = {"state": compact(state.to_json()), "schemaChange": state.schema_change.to_json()}
    plan = reconcile(Observation(cr, running("streaming"), dict(SECRETS)))
    cr["status"].update(plan.status)
    health = run(CUSTOMIZATION / "health.lua", cr)
    assert health["status"] == "Suspended"
    assert "mysql-bin.000003:4711" in health["message"] and "spec.schemaChanges.approved" in health["message"]
