"""The chart's alert rules, with Debian's promtool: they are valid rules, and each alert
fires when it should, not before, and resolves (alert_rules_test.yaml, promtool's own unit
test format). Their metrics against a live pipeline: sluice/runtime/test_pipeline_metrics.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.prometheus import PROMTOOL, alert_expressions, chart_alert_rules

UNIT_TESTS = Path(__file__).with_name("alert_rules_test.yaml")


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    return chart_alert_rules(tmp_path / "rules.yaml")


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, cwd=cwd)


def test_the_charts_alert_rules_are_valid(rules):
    checked = promtool("check", "rules", str(rules), cwd=rules.parent)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 5 rules found" in checked.stdout


def test_each_alert_fires_when_it_should_and_resolves(rules):
    shutil.copy(UNIT_TESTS, rules.parent)
    tested = promtool("test", "rules", UNIT_TESTS.name, cwd=rules.parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    unit_tests = UNIT_TESTS.read_text()
    for alert in alert_expressions(rules):
        assert f"alertname: {alert}, exp_alerts: []" in unit_tests and f"alertname: {alert}\n" in unit_tests, alert


def test_the_thresholds_come_from_the_values(tmp_path):
    rules = chart_alert_rules(tmp_path / "rules.yaml", "alerts.lagSeconds=30", "alerts.restarts=5")
    expressions = alert_expressions(rules)
    assert expressions["SluiceBinlogLagHigh"].endswith("> 30")
    assert expressions["SluiceDriverRestarting"].endswith(">= 5")
