"""The operator end to end, as a user runs it: `kubectl apply` of a CdcPipeline against the
Kubernetes API test double, the operator as its own process, the Spark Operator test
double running each SparkApplication as a local spark-submit of the image's driver,
MariaDB as the source and PostgreSQL (or an Iceberg catalog in it) as the target."""

from __future__ import annotations

import base64
import io
import json
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.source.schema import read_table_schema
from tests.harness.cluster import Cluster, apply, manifest
from tests.harness.compare import diff, postgres_rows, source_rows
from tests.harness.lakehouse import lakehouse_rows
from tests.harness.prometheus import Prometheus, chart_alert_rules, start_prometheus
from tests.harness.services import MariaDB, PostgreSQL

pytestmark = pytest.mark.slow


def seed(mariadb: MariaDB, db: str, rows: int) -> None:
    mariadb.execute(
        "SET SESSION max_recursive_iterations = 10000000",
        f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(10,2))",
        f"INSERT INTO {db}.orders WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {rows}) "
        "SELECT n, CONCAT('c', n % 97), (n % 1000) + 0.25 FROM s",
    )


def changes(mariadb: MariaDB, db: str, start: int) -> None:
    mariadb.execute(
        f"INSERT INTO {db}.orders (id, customer, total) VALUES ({start}, 'new', 1.00), ({start + 1}, 'new', 2.00)",
        f"UPDATE {db}.orders SET total = total + 1 WHERE id % 50 = 0",
        f"UPDATE {db}.orders SET id = {start + 2} WHERE id = 7",  # a primary-key change
        f"DELETE FROM {db}.orders WHERE id % 77 = 0",
    )


def wait_equal(mariadb: MariaDB, postgresql: PostgreSQL, db: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        expected = sorted(source_rows(mariadb, db, "orders"))
        try:
            actual = sorted(postgres_rows(postgresql, db, "orders"))
        except Exception:  # noqa: BLE001 - not created yet
            actual = []
        if expected == actual:
            return
        if time.monotonic() > deadline:
            raise AssertionError(diff(expected, actual))
        time.sleep(0.5)


def first_commit_after(cluster: Cluster, mariadb: MariaDB, db: str) -> float:
    """When the streaming driver first committed (its binlog position moved), in time.monotonic()."""
    before = cluster.cdc_pipeline("orders")["status"]["binlog"]["position"]
    mariadb.execute(
        f"INSERT INTO {db}.orders VALUES (999999, 'probe', 0)", f"DELETE FROM {db}.orders WHERE id = 999999"
    )
    while cluster.cdc_pipeline("orders")["status"]["binlog"]["position"] == before:
        time.sleep(0.05)
    return time.monotonic()


def wait_streaming(cluster: Cluster, name: str) -> dict[str, Any]:
    """Streaming and Ready: the streaming-shaped SparkApplication runs."""

    def ready(status: dict[str, Any]) -> bool:
        found = {c["type"]: c["status"] for c in status.get("conditions", [])}
        return status.get("phase") == "Streaming" and found.get("Ready") == "True"

    return cluster.wait(name, "streaming", ready)


def pending_of(status: dict[str, Any]) -> str:
    """The SchemaChangePending condition's message ("" while none is pending)."""
    found = {c["type"]: c for c in status.get("conditions", [])}
    return found.get("SchemaChangePending", {}).get("message", "")


def executors_read(document: dict) -> dict:
    """Spark's executors read every snapshot split (the driver reads none while Spark starts)."""
    document["spec"]["source"]["scan.snapshot.read-on-driver"] = False
    return document


@pytest.fixture
def prometheus(cluster: Cluster) -> Iterator[Callable[[list[str], Path], Prometheus]]:
    """Starts a real Prometheus scraping the given targets with the given rules."""
    started: list[Prometheus] = []

    def start(targets: list[str], rules: Path) -> Prometheus:
        started.append(start_prometheus(cluster.directory / "prometheus", targets, [rules]))
        return started[-1]

    yield start
    for each in started:
        each.stop()


def test_apply_snapshot_scale_down_stream_and_a_manual_schema_change(
    cluster, mariadb, postgresql, source_db, prometheus
):
    seed(mariadb, source_db, 3000)
    cluster.passwords(mariadb, postgresql)
    apply(cluster, manifest("orders", mariadb, postgresql, f"{source_db}.orders"))

    # The snapshot runs with 2 executors.
    cluster.wait("orders", "the snapshot shape", lambda s: (s.get("application") or {}).get("shape") == "snapshot")
    assert cluster.application("orders")["spec"]["executor"]["instances"] == 2
    # Prometheus scrapes the operator and the driver pod's metrics port (which the double
    # keeps for the application's every run), with the chart's alert rules.
    driver = f"127.0.0.1:{cluster.driver_port('orders', 'metrics')}"
    rules = chart_alert_rules(cluster.directory / "rules.yaml", "alerts.schemaChangeWaitingFor=0s")
    scraped = prometheus([f"127.0.0.1:{cluster.operator.port}", driver], rules)
    # Every split done: the SparkApplication changes to its streaming shape and is rerun.
    status = wait_streaming(cluster, "orders")
    assert status["snapshot"]["splitsDone"] == status["snapshot"]["splitsTotal"] > 10
    app = cluster.application("orders")
    assert "instances" not in app["spec"]["executor"] and app["spec"]["dynamicAllocation"]["maxExecutors"] == 1
    run = cluster.spark.runs[(cluster.namespace, "orders-sluice")]
    story = (cluster.directory / "spark" / "spark-operator-double.log").read_text()
    assert run.history[-4:] == ["INVALIDATING", "PENDING_RERUN", "SUBMITTED", "RUNNING"], (
        story,
        cluster.events("orders"),
    )
    first_commit = first_commit_after(cluster, mariadb, source_db)
    stopped, started = run.times[-3] - run.times[-4], first_commit - run.times[-2]
    print(f"scale-down switch: old driver stopped in {stopped:.1f}s, new one committing {started:.1f}s after submit")
    changes(mariadb, source_db, 10_000)
    wait_equal(mariadb, postgresql, source_db)
    lagging = cluster.wait("orders", "the lag", lambda s: "lag" in (s.get("binlog") or {}), timeout=30)
    assert lagging["binlog"]["lagSeconds"] < 60 and lagging["binlog"]["lag"] in cluster.kubectl("get", "cdcp", "orders")
    wide = cluster.kubectl("get", "cdcp", "orders", "-o", "wide").splitlines()
    assert wide[0].split()[-5:] == ["POSITION", "ROWS", "SCHEMA", "CHANGE", "ERROR"], wide
    assert lagging["binlog"]["position"] in wide[1] and str(lagging["snapshot"]["rows"]) in wide[1]
    assert "POSITION" not in cluster.kubectl("get", "cdcp", "orders").splitlines()[0]

    # An ALTER TABLE under `manual`: paused, visible in kubectl and in conditions.
    mariadb.execute(f"ALTER TABLE {source_db}.orders ADD COLUMN note VARCHAR(20) DEFAULT 'none'")
    mariadb.execute(f"INSERT INTO {source_db}.orders VALUES (20000, 'after', 3.00, 'noted')")
    # The pause begins with the flush; the approval is asked for once the flush is done.
    status = cluster.wait("orders", "the schema-change approval", lambda s: "waits for approval" in pending_of(s))
    table = cluster.kubectl("get", "cdcp", "orders")
    assert "SchemaChangePaused" in table.splitlines()[1]
    change_id = status["schemaChange"]["id"]
    pending = next(c for c in status["conditions"] if c["type"] == "SchemaChangePending")
    assert status["phase"] == "SchemaChangePaused" and pending["status"] == "True" and change_id in pending["message"]
    assert "spec.schemaChanges.approved" in pending["message"]
    assert postgres_rows(postgresql, source_db, "orders", "count(*)") != [
        (len(source_rows(mariadb, source_db, "orders")),)
    ]
    scraped.wait_for_alert("SluiceSchemaChangeWaiting", "firing", time.monotonic() + 60)

    # Approving is a patch of the spec; the change is applied and the pipeline streams again.
    approval = json.dumps({"spec": {"schemaChanges": {"approved": [change_id]}}})
    cluster.kubectl("patch", "cdcp", "orders", "--type", "merge", "-p", approval)
    cluster.wait("orders", "streaming after the change", lambda s: s.get("phase") == "Streaming")
    changes(mariadb, source_db, 30_000)
    wait_equal(mariadb, postgresql, source_db)

    # Every panel and alert has its series, from the operator and the streaming driver.
    # (No value here needs a type rule's rewrite: sluice/runtime/test_pipeline_metrics.py has one.)
    scraped.wait_for_every_panel_and_alert(rules, time.monotonic() + 60, leave_out=["sluice_values_rewritten_total"])
    scraped.wait_for_alert("SluiceSchemaChangeWaiting", None, time.monotonic() + 30)
    scraped.wait_for_value(
        'sum(sluice_pipeline_phase{name="orders",phase="Streaming"})',
        1,
        time.monotonic() + 10,
        lambda: (
            f"status phase {cluster.cdc_pipeline('orders')['status']['phase']}, operator log: "
            + cluster.operator.log.read_text()[-3000:]
        ),
    )
    # A counter lives as long as its driver: one restarted after applying the change reads 0.
    assert scraped.value("sum(sluice_schema_changes_applied_total)") == 1, (
        f"runs of the application: {run.history}; driver log: {run.log.read_text()[-3000:]}"
    )

    status = cluster.cdc_pipeline("orders")["status"]
    assert status["observedGeneration"] == cluster.cdc_pipeline("orders")["metadata"]["generation"]
    assert status["schemaChangeHistory"][-1]["id"] == change_id
    reasons = {reason for reason, _ in cluster.events("orders")}
    assert {"Submit", "ScaleDown", "SchemaChangePending", "SpecChanged", "JobStatusChanged"} <= reasons
    # The operator and the driver wrote the CdcPipeline's status and nothing else of it.
    for write in cluster.kube_api.double.writes:
        mine = (write["kind"], write["namespace"], write["name"]) == ("CdcPipeline", cluster.namespace, "orders")
        if mine and "kubectl" not in write["agent"]:
            assert write["subresource"] == "status", write
    # Deleting the CdcPipeline removes what the operator created (the target stays).
    cluster.kubectl("delete", "cdcp", "orders")
    assert cluster.application("orders") is None
    assert cluster.core.list_namespaced_config_map(cluster.namespace).items == []
    assert postgres_rows(postgresql, source_db, "orders", "count(*)") == [
        (len(source_rows(mariadb, source_db, "orders")),)
    ]


def test_a_killed_driver_resumes_from_status_and_an_operator_restart_changes_nothing(
    cluster, mariadb, postgresql, source_db
):
    seed(mariadb, source_db, 300_000)
    cluster.passwords(mariadb, postgresql)
    # The first driver SIGKILLs itself once it has recorded 5 of its 1,200 splits.
    cluster.spark.extra_env = {"SLUICE_FAILPOINT": "snapshot:split-finished:5"}
    apply(cluster, executors_read(manifest("killed", mariadb, postgresql, f"{source_db}.orders")))
    cluster.wait("killed", "the driver's failure", lambda s: (s.get("application") or {}).get("state") == "FAILING")
    cluster.spark.extra_env = {}
    status = cluster.cdc_pipeline("killed")["status"]
    degraded = next(c for c in status["conditions"] if c["type"] == "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "DriverFailed"

    # The operator dies mid-flight and comes back: it changes nothing.
    cluster.operator.kill()
    cluster.operator.start()
    cluster.wait(
        "killed", "streaming", lambda s: s.get("phase") == "Streaming" and s["application"]["state"] == "RUNNING"
    )
    changes(mariadb, source_db, 1_000_000)
    wait_equal(mariadb, postgresql, source_db)

    # Suspended: no driver, the state kept; resumed: it goes on from that state.
    cluster.kubectl("patch", "cdcp", "killed", "--type", "merge", "-p", '{"spec":{"suspend":true}}')
    cluster.wait("killed", "suspended", lambda s: s.get("phase") == "Suspended")
    deadline = time.monotonic() + 60
    while cluster.spark.driver_pid(cluster.namespace, "killed-sluice") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster.spark.driver_pid(cluster.namespace, "killed-sluice") is None
    changes(mariadb, source_db, 2_000_000)
    cluster.kubectl("patch", "cdcp", "killed", "--type", "merge", "-p", '{"spec":{"suspend":false}}')
    wait_streaming(cluster, "killed")
    wait_equal(mariadb, postgresql, source_db)

    logs = sorted((cluster.directory / "spark").rglob("driver.log"))
    resumed = [line for log in logs for line in log.read_text().splitlines() if "snapshot: resuming" in line]
    assert resumed and int(resumed[0].split("resuming, ")[1].split(" of")[0]) >= 5  # finished splits not re-read
    history = cluster.spark.runs[(cluster.namespace, "killed-sluice")].history
    assert history.count("INVALIDATING") == 1  # the one switch to streaming; no spurious rerun
    suspended_at = history.index("SUSPENDING")
    assert history[suspended_at:] == ["SUSPENDING", "SUSPENDED", "RESUMING", "SUBMITTED", "RUNNING"]
    assert cluster.operator.get("/healthz") == (200, "ok") and cluster.operator.get("/readyz")[0] == 200
    for log in cluster.directory.rglob("*.log"):  # the driver's, the operator's, the double's
        assert mariadb.password not in log.read_text(errors="replace"), log
    metrics = cluster.operator.get("/metrics")[1]
    assert f'sluice_pipeline_phase{{name="killed",namespace="{cluster.namespace}",phase="Streaming"}} 1.0' in metrics
    assert 'sluice_operator_reconciles_total{result="ok"}' in metrics


def test_a_table_added_to_a_streaming_pipeline_is_snapshotted_at_the_new_parallelism_and_joins(
    cluster, mariadb, postgresql, source_db
):
    seed(mariadb, source_db, 600)
    cluster.passwords(mariadb, postgresql)
    apply(cluster, executors_read(manifest("grows", mariadb, postgresql, f"{source_db}.orders")))
    wait_streaming(cluster, "grows")
    mariadb.execute(
        "SET SESSION max_recursive_iterations = 10000000",
        f"CREATE TABLE {source_db}.items (id INT PRIMARY KEY, sku VARCHAR(20))",
        f"INSERT INTO {source_db}.items WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s "
        "WHERE n < 30000) SELECT n, CONCAT('sku', n) FROM s",
    )

    # Both edits in one patch: the new table is snapshotted with parallelism 3 executors.
    edit = {
        "spec": {
            "source": {"tables": f"{source_db}.orders,{source_db}.items"},
            "pipeline": {"parallelism": 3},
            "spark": {"snapshotExecutors": None},
        }
    }
    cluster.kubectl("patch", "cdcp", "grows", "--type", "merge", "-p", json.dumps(edit))
    cluster.wait("grows", "the new table's snapshot", lambda s: (s.get("application") or {}).get("shape") == "snapshot")
    assert cluster.application("grows")["spec"]["executor"]["instances"] == 3
    wait_streaming(cluster, "grows")
    mariadb.execute(
        f"INSERT INTO {source_db}.items VALUES (500000, 'later')", f"DELETE FROM {source_db}.items WHERE id = 3"
    )
    changes(mariadb, source_db, 10_000)
    wait_equal(mariadb, postgresql, source_db)
    deadline = time.monotonic() + 60
    while sorted(postgres_rows(postgresql, source_db, "items")) != sorted(source_rows(mariadb, source_db, "items")):
        assert time.monotonic() < deadline, diff(
            source_rows(mariadb, source_db, "items"), postgres_rows(postgresql, source_db, "items")
        )
        time.sleep(0.5)


def test_an_iceberg_target_whose_catalog_password_comes_from_a_secret(cluster, mariadb, postgresql, source_db):
    """The catalog is a sql catalog in the test PostgreSQL; its password is the Secret's,
    and appears in no SparkApplication, status or event."""
    seed(mariadb, source_db, 1500)
    cluster.passwords(mariadb, postgresql)
    document = manifest("lake", mariadb, postgresql, f"{source_db}.orders", **{"schema.change.behavior": "evolve"})
    catalog = f"postgresql+psycopg://{postgresql.user}@{postgresql.host}:{postgresql.port}/{postgresql.database}"
    warehouse = f"file://{cluster.directory}/warehouse"
    document["spec"]["sink"] = {
        "type": "iceberg",
        "catalog.properties.type": "sql",
        "catalog.properties.uri": catalog,
        "catalog.properties.warehouse": warehouse,
        "sink.commit.interval": "500ms",
        "passwordSecretRef": {"name": "postgresql", "key": "password"},
    }
    apply(cluster, document)
    wait_streaming(cluster, "lake")
    changes(mariadb, source_db, 10_000)

    reader = {**document["spec"]["sink"], "catalog.properties.uri": catalog.replace("@", f":{postgresql.password}@")}
    conn = mariadb.connect(source_db)
    schema = read_table_schema(conn, source_db, "orders", None)
    conn.close()
    deadline = time.monotonic() + 120
    while (held := sorted(lakehouse_rows(reader, schema) or [])) != (
        expected := sorted(source_rows(mariadb, source_db, "orders"))
    ):
        assert time.monotonic() < deadline, diff(expected, held)
        time.sleep(0.5)
    shown = json.dumps([cluster.application("lake"), cluster.cdc_pipeline("lake"), cluster.events("lake")])
    assert postgresql.password not in shown


def test_a_source_that_requires_tls_is_read_with_certificates_from_a_secret(
    cluster, tls_server, certificates, postgresql
):
    """A user created REQUIRE SSL (what managed MySQL imposes), the server verified against
    the CA in a Secret the CdcPipeline names: the driver and the executors read it where it is
    mounted, and the snapshot and the binlog both reach the target."""
    database = f"tls_{int(time.time() * 1000) % 10**8}"
    tls_server.execute(f"CREATE DATABASE {database}")
    seed(tls_server, database, 1200)
    cluster.secret("mariadb", "pw-ssl")
    cluster.secret("postgresql", postgresql.password)
    ca = base64.b64encode(certificates.ca.read_bytes()).decode()
    cluster.core.create_namespaced_secret(
        cluster.namespace, {"metadata": {"name": "mysql-tls"}, "data": {"ca.crt": ca}}
    )
    document = executors_read(manifest("secure", tls_server, postgresql, f"{database}.orders"))
    document["spec"]["source"].update(
        {"username": "cdc_ssl", "ssl-mode": "verify_identity", "tlsSecretRef": {"name": "mysql-tls"}}
    )
    apply(cluster, document)
    wait_streaming(cluster, "secure")
    changes(tls_server, database, 10_000)
    wait_equal(tls_server, postgresql, database)


def test_a_python_udf_reads_its_python_files_from_a_config_map_the_cdc_pipeline_mounts(
    cluster, mariadb, postgresql, source_db
):
    """Flink CDC's inline Python UDF form, its python-files (a directory of modules and a
    .zip archive) in a ConfigMap that spec.pythonFiles mounts: executors and the streaming
    driver call it."""
    seed(mariadb, source_db, 600)
    cluster.secret("mariadb", mariadb.password)
    cluster.secret("postgresql", postgresql.password)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("suffixes.py", "def tagged(s):\n    return s + '!'\n")
    cluster.core.create_namespaced_config_map(
        cluster.namespace,
        {
            "metadata": {"name": "udf-modules"},
            "data": {"shouting.py": "def shout(s):\n    return s.upper()\n"},
            "binaryData": {"suffixes.zip": base64.b64encode(archive.getvalue()).decode()},
        },
    )
    document = executors_read(manifest("udfs", mariadb, postgresql, f"{source_db}.orders"))
    document["spec"]["pythonFiles"] = [{"mountPath": "/opt/flink/python-deps", "configMap": {"name": "udf-modules"}}]
    document["spec"]["pipeline"]["user-defined-function"] = [
        {
            "name": "py_shout",
            "python-code": "import shouting\nimport suffixes\n\n\ndef eval(s: str) -> str:\n"
            "    return suffixes.tagged(shouting.shout(s))\n",
            "python-files": ["/opt/flink/python-deps", "/opt/flink/python-deps/suffixes.zip"],
        }
    ]
    document["spec"]["transform"] = [
        {"source-table": f"{source_db}.orders", "projection": "id, py_shout(customer) AS loud"}
    ]
    apply(cluster, document)
    wait_streaming(cluster, "udfs")
    mariadb.execute(f"INSERT INTO {source_db}.orders VALUES (5000, 'late', 1.00)")

    def expected() -> list[tuple]:
        return sorted((i, f"{c.upper()}!") for i, c, _ in source_rows(mariadb, source_db, "orders"))

    deadline = time.monotonic() + 120
    while (actual := _rows_or_none(postgresql, source_db)) != expected():
        assert time.monotonic() < deadline, diff(expected(), actual or [])
        time.sleep(0.5)


def _rows_or_none(postgresql: PostgreSQL, db: str) -> list[tuple] | None:
    try:
        return sorted(postgres_rows(postgresql, db, "orders"))
    except Exception:  # noqa: BLE001 - not created yet
        return None
