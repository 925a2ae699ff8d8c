"""A real Prometheus (Debian's package) scraping what a test serves, with the chart's alert
rules loaded, and promtool: what the metrics, dashboard and alert tests query."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from tests.harness.services import _stop, _wait, free_port
from tests.harness.tools import HELM

ROOT = Path(__file__).parents[2]
CHART = ROOT / "charts" / "sluice"
DASHBOARD = CHART / "dashboards" / "sluice.json"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
METRIC_NAME = re.compile(r"\b(sluice_[a-z_]+)\b")


@dataclass
class Prometheus:
    process: subprocess.Popen
    port: int

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result vector (an error in the expression fails the test)."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as response:
            answer = json.load(response)
        assert answer["status"] == "success", (expr, answer)
        return answer["data"]["result"]

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def alerts(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/alerts", timeout=10) as response:
            return json.load(response)["data"]["alerts"]

    def wait_for(self, expr: str, deadline: float, what: str = "") -> list[dict[str, Any]]:
        while not (result := self.query(expr)):
            assert time.monotonic() < deadline, f"no series for {what or expr}"
            time.sleep(0.5)
        return result

    def wait_for_value(self, expr: str, value: float, deadline: float, context: Callable[[], str]) -> None:
        """Until `expr` reads `value`: a gauge set between two scrapes is read at the next.
        `context` says what the test saw meanwhile, should it never."""
        while (found := self.value(expr)) != value:
            assert time.monotonic() < deadline, f"{expr} is {found}, not {value}: {context()}"
            time.sleep(0.5)

    def wait_for_alert(self, name: str, state: str | None, deadline: float) -> None:
        """Until the alert is in `state` (firing, pending), or inactive with None."""
        while True:
            states = {alert["state"] for alert in self.alerts() if alert["labels"]["alertname"] == name}
            if (state in states) if state else not states:
                return
            assert time.monotonic() < deadline, f"{name}: {states or 'inactive'}, not {state or 'inactive'}"
            time.sleep(0.5)

    def wait_for_every_panel_and_alert(self, rules: Path, deadline: float, leave_out: Iterable[str] = ()) -> None:
        """Until every query of every dashboard panel and every metric an alert selects has
        series (`leave_out`: metrics this test's targets do not serve)."""
        for title, expr in dashboard_queries():
            if metric_names(expr) - set(leave_out):
                self.wait_for(expr, deadline, f"panel {title!r}: {expr}")  # a rate needs two scrapes
        for alert, expr in alert_expressions(rules).items():
            for name in metric_names(expr) - set(leave_out):
                self.wait_for(f'count({{__name__="{name}"}})', deadline, f"alert {alert}: {name}")

    def stop(self) -> None:
        _stop(self.process)


def start_prometheus(base: Path, targets: Iterable[str], rule_files: Iterable[Path] = ()) -> Prometheus:
    """Scrapes `targets` (host:port) every second and evaluates the rules every second."""
    base.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": [{"job_name": "sluice", "static_configs": [{"targets": list(targets)}]}],
    }
    (base / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = base / "prometheus.log"
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={base / 'prometheus.yml'}",
            f"--storage.tsdb.path={base / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    server = Prometheus(process, port)
    _wait(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2), "prometheus", log)
    return server


def chart_alert_rules(path: Path, *settings: str) -> Path:
    """The chart's PrometheusRule, rendered by helm with `settings` (--set), as a rule file."""
    args = [str(HELM), "template", "sluice", str(CHART), "--set", "alerts.enabled=true"]
    for setting in settings:
        args += ["--set", setting]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    (rule,) = [d for d in yaml.safe_load_all(done.stdout) if d and d["kind"] == "PrometheusRule"]
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    return path


def dashboard_queries(pipeline: str = ".*") -> list[tuple[str, str]]:
    """(panel title, expression) for every query of every panel, its variables filled in as
    Grafana would: $pipeline as the regex, $__rate_interval as 4 scrape intervals."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$pipeline", pipeline).replace("$__rate_interval", "4s")
            queries.append((panel["title"], expr))
    return queries


def alert_expressions(rule_file: Path) -> dict[str, str]:
    rules = yaml.safe_load(rule_file.read_text())["groups"][0]["rules"]
    return {rule["alert"]: rule["expr"] for rule in rules}


def metric_names(expr: str) -> set[str]:
    """The metrics an expression selects (a histogram's by its series' names)."""
    return set(METRIC_NAME.findall(expr))


def exported_names(registry: CollectorRegistry) -> set[str]:
    """Every series name a registry serves, labelled ones before their first labels."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    return {family.name + suffix for family in registry.collect() for suffix in suffixes.get(family.type, ("",))}
