"""Getting started, run to the letter: its pipeline YAML and its commands, as the page writes
them, against this machine's MariaDB and PostgreSQL (only the hosts, ports and users are
this machine's). And its steps read as one numbered list on the site."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.docs.test_site import ROOT, mkdocs_build
from tests.harness.compare import postgres_rows_once_created

PAGE = ROOT / "docs" / "getting-started.md"
SLUICE = str(Path(sys.executable).parent / "sluice")


def _section_blocks(language: str) -> list[str]:
    """The fenced blocks of the five-minute section in `language`, dedented."""
    text = PAGE.read_text()
    section = text[text.index("## Your own MySQL in five minutes") :]
    return [
        textwrap.dedent(body)
        for indent, body in re.findall(rf"^( *)```{language}\n(.*?)^\1```", section, flags=re.M | re.S)
    ]


def _for_this_machine(pipeline: str, mariadb, postgresql) -> str:
    """The page's YAML with this machine's servers and users; nothing else changed."""
    replaced = {
        "hostname: db.internal": f"hostname: {mariadb.host}",
        "port: 3306": f"port: {mariadb.port}",
        "username: cdc": f"username: {mariadb.user}",
        "url: postgresql://warehouse:5432/analytics": f"url: {postgresql.url}",
        "username: loader": f"username: {postgresql.user}",
    }
    for page_text, ours in replaced.items():
        assert page_text in pipeline, f"the page's pipeline no longer says {page_text!r}"
        pipeline = pipeline.replace(page_text, ours)
    return pipeline


def test_the_five_minute_pipeline_runs_as_the_page_says(tmp_path, mariadb, postgresql):
    mariadb.execute(
        "DROP DATABASE IF EXISTS app_db",
        "DROP DATABASE IF EXISTS shop",
        "CREATE DATABASE app_db",
        "CREATE DATABASE shop",
        "CREATE TABLE app_db.customers (id INT PRIMARY KEY, name VARCHAR(40))",
        "CREATE TABLE app_db.events (event_id BIGINT NOT NULL, kind VARCHAR(20), KEY (event_id))",
        "CREATE TABLE app_db.audit_log (id INT PRIMARY KEY, line TEXT)",
        "CREATE TABLE shop.order_1 (id INT PRIMARY KEY, amount DECIMAL(10,2))",
        "INSERT INTO app_db.customers VALUES (1, 'ada'), (2, 'grace')",
        "INSERT INTO app_db.events VALUES (1, 'signup'), (1, 'signup'), (2, 'login')",
        "INSERT INTO app_db.audit_log VALUES (1, 'left out')",
        "INSERT INTO shop.order_1 VALUES (10, 9.99)",
    )
    (yaml,) = _section_blocks("yaml")
    (tmp_path / "pipeline.yaml").write_text(_for_this_machine(yaml, mariadb, postgresql))
    commands, status = _section_blocks("sh")
    lines = commands.strip().splitlines()
    assert lines[0].startswith("export MYSQL_PASSWORD=") and "PG_PASSWORD=" in lines[0]
    env = {**os.environ, "MYSQL_PASSWORD": mariadb.password, "PG_PASSWORD": postgresql.password}

    def argv(line: str) -> list[str]:
        words = line.split()
        assert words[0] == ".venv/bin/sluice", line
        return [SLUICE, *words[1:]]

    check, run = lines[1], lines[2]
    checked = subprocess.run(argv(check), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    running = subprocess.Popen(argv(run), cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while len(postgres_rows_once_created(postgresql, "shop", "order_1") or []) < 1:
            assert running.poll() is None, running.communicate()[1]
            assert time.monotonic() < deadline, "the run did not copy shop.order_1"
            time.sleep(0.2)
        mariadb.execute("INSERT INTO app_db.customers VALUES (3, 'barbara')")
        while len(postgres_rows_once_created(postgresql, "app_db", "customers") or []) < 3:
            assert running.poll() is None, running.communicate()[1]
            assert time.monotonic() < deadline, "the run did not stream the insert"
            time.sleep(0.2)
        shown = subprocess.run(argv(status.strip()), cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("pipeline app-to-warehouse: Streaming, running"), shown.stdout
    finally:
        running.send_signal(signal.SIGTERM)
        _, stderr = running.communicate(timeout=60)
    assert running.returncode == 0, stderr
    assert postgres_rows_once_created(postgresql, "app_db", "audit_log") is None  # tables.exclude
    assert len(postgres_rows_once_created(postgresql, "app_db", "events") or []) == 3
    orders = postgres_rows_once_created(postgresql, "shop", "order_1") or []
    assert [tuple(map(str, row)) for row in orders] == [("10", "9.99")]


def test_the_steps_are_one_numbered_list_on_the_site(tmp_path):
    built = mkdocs_build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stderr
    html = (tmp_path / "site" / "getting-started" / "index.html").read_text()
    section = html[html.index("five minutes") :]
    tags = re.findall(r"</?ol[^>]*>|<li>", section)
    assert tags[:5] == ["<ol>", "<li>", "<li>", "<li>", "</ol>"], tags[:8]
