"""`make dashboard-picture`: the chart's Grafana dashboard drawn from real data, for the docs (Operating).

A local MariaDB and PostgreSQL, a pipeline run with --metrics-port, and a real Prometheus
scraping it every second. The pipeline snapshots a table, then streams an application's
writes; a schema change comes, and the source stops for a while and comes back. Every
panel's queries are then read over the run (Prometheus's query_range) and drawn as the
dashboard lays them out (matplotlib: Grafana itself has no package here).
"""

from __future__ import annotations

import json
import random
import re
import signal
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.harness.pipelines import (
    pipeline_yaml,
    postgres_sink,
    sluice_env,
    start_sluice,
    wait_until_in_binlog_phase,
    write_pipeline,
)
from tests.harness.prometheus import DASHBOARD, Prometheus, start_prometheus
from tests.harness.services import free_port, running_services, scratch_directory

PICTURE = DASHBOARD.with_suffix(".png")
ROWS = 400_000
STEP = 2  # seconds between the plotted points


def application(mariadb, stop: threading.Event) -> None:  # noqa: ANN001
    """Orders placed, paid and cancelled, a few hundred a second, while the source is up."""
    next_id, rng = ROWS, random.Random(7)
    conn = None
    while not stop.is_set():
        next_id += 1  # before: an insert the server took just before it stopped is not made twice
        try:
            conn = conn or mariadb.connect("shop")
            with conn.cursor() as cur:
                placed = "0000-00-00" if next_id % 50 == 0 else "2024-01-01"  # a legacy client's zero date
                cur.execute(
                    "INSERT INTO orders (id, customer, amount, status, placed) "
                    f"VALUES ({next_id}, 'live', 1.00, 'new', '{placed}')"
                )
                cur.execute(f"UPDATE orders SET status = 'paid' WHERE id = {rng.randrange(1, next_id)}")
                if rng.random() < 0.2:
                    cur.execute(f"DELETE FROM orders WHERE id = {rng.randrange(1, next_id)}")
            time.sleep(0.004)
        except Exception:  # noqa: BLE001 - the source is down for a while: wait for it
            conn = None
            time.sleep(0.5)


def series(prometheus: Prometheus, expr: str, start: float, end: float) -> list[tuple[str, list[float], list[float]]]:
    query = {"query": expr, "start": start, "end": end, "step": STEP}
    url = f"http://127.0.0.1:{prometheus.port}/api/v1/query_range?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=30) as response:
        result = json.load(response)["data"]["result"]
    return [
        (each["metric"], [float(t) - start for t, _ in each["values"]], [float(v) for _, v in each["values"]])
        for each in result
    ]


def legend(form: str, metric: dict[str, str]) -> str:
    """Grafana's legend format ({{label}} replaced), the pipeline's name left out: one pipeline here."""
    text = re.sub(r"\{\{(\w+)\}\}", lambda m: "" if m.group(1) == "pipeline" else metric.get(m.group(1), ""), form)
    if not text.strip():  # a table panel: its labels
        text = " ".join(metric.get(k, "") for k in ("table", "column", "rule"))
    return text.strip()


def draw(prometheus: Prometheus, start: float, end: float, marks: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dashboard = json.loads(DASHBOARD.read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    columns = 3
    rows = -(-len(panels) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(16, 3.1 * rows), constrained_layout=True)
    figure.suptitle(
        f"{dashboard['title']} (a real run: snapshot of {ROWS:,} rows, live writes, a schema change, "
        "the source stopped and back)"
    )
    for axis, panel in zip(axes.flat, panels, strict=False):
        axis.set_title(panel["title"], fontsize=10)
        for target in panel["targets"]:
            expr = target["expr"].replace("$pipeline", ".*").replace("$__rate_interval", "4s")
            for metric, times, values in series(prometheus, expr, start, end):
                axis.plot(times, values, label=legend(target.get("legendFormat", ""), metric) or None, linewidth=1.2)
        for name, at in marks.items():
            axis.axvline(at - start, color="grey", linestyle=":", linewidth=0.8)
            axis.annotate(
                name,
                (at - start, 1),
                xycoords=("data", "axes fraction"),
                fontsize=6,
                rotation=90,
                va="top",
                ha="right",
                color="grey",
            )
        axis.set_xlabel("seconds", fontsize=7)
        axis.tick_params(labelsize=7)
        axis.text(
            0.99,
            0.02,
            panel["fieldConfig"]["defaults"].get("unit", ""),
            transform=axis.transAxes,
            fontsize=7,
            ha="right",
            color="grey",
        )
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=6, loc="upper left")
    for axis in list(axes.flat)[len(panels) :]:
        axis.axis("off")
    figure.savefig(PICTURE, dpi=80)


def main() -> None:
    base = scratch_directory("sluice-dashboard-")
    with running_services(base) as (mariadb, postgresql):
        mariadb.execute(
            "SET SESSION max_recursive_iterations = 10000000",
            "SET SESSION sql_mode = ''",
            "CREATE DATABASE shop",
            "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(40), amount DECIMAL(10,2), "
            "status VARCHAR(12), placed DATE NOT NULL)",
            f"INSERT INTO shop.orders WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {ROWS}) "
            "SELECT n, CONCAT('customer-', n % 97), n % 1000 + 0.99, 'new', "
            "IF(n % 1000 = 0, '0000-00-00', '2023-06-01') FROM s",
        )
        port = free_port()
        definition = pipeline_yaml(
            mariadb,
            "shop.orders",
            postgres_sink(postgresql),
            name="dashboard",
            **{"scan.incremental.snapshot.chunk.size": 8000, "heartbeat.interval": "1s"},
        )
        prometheus = start_prometheus(base / "prometheus", [f"127.0.0.1:{port}"])
        time.sleep(6)  # Prometheus's first scrape
        start, marks = time.time(), {}
        process = start_sluice(
            write_pipeline(base / "p.yaml", definition),
            base / "state",
            sluice_env(mariadb, postgresql),
            "--metrics-port",
            str(port),
        )
        try:
            wait_until_in_binlog_phase(process, base / "state", time.monotonic() + 600)
            marks["streaming"] = time.time()
            stop = threading.Event()
            writer = threading.Thread(target=application, args=(mariadb, stop), daemon=True)
            writer.start()
            time.sleep(20)
            marks["schema change"] = time.time()
            mariadb.execute("ALTER TABLE shop.orders ADD COLUMN channel VARCHAR(10) DEFAULT 'web'")
            time.sleep(15)
            marks["source stopped"] = time.time()
            mariadb.stop()
            time.sleep(15)
            mariadb.start_again()
            marks["source back"] = time.time()
            time.sleep(25)
            stop.set()
            writer.join()
            time.sleep(5)
            end = time.time()
            draw(prometheus, start, end, marks)
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
            prometheus.stop()
    print(f"dashboard drawn from a real run: {Path(PICTURE).relative_to(Path.cwd())}")


if __name__ == "__main__":
    main()
