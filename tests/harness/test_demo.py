"""`make demo`, the README's first command, shows what it says it shows: the snapshot, live
changes and a schema change reaching a real PostgreSQL, and a clean stop."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[2]


def test_the_demo_snapshots_streams_and_follows_a_schema_change():
    ran = subprocess.run(
        [sys.executable, "-m", "tests.harness.demo"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    said = ran.stdout
    # Every split read; how many there are follows InnoDB's row estimate, which varies run to run (10 or 11).
    assert re.search(r"snapshot: (\d+)/\1 splits, 50,000 rows", said), said[-3000:]
    assert "--- after the schema change: shop.orders in PostgreSQL, 50,001 rows" in said
    assert "(60001, 'mobile-user', 'app', Decimal('7.25'), 'new')" in said  # a row that uses the new column
    assert "applied to the target" in said and "resumed after it" in said
    assert "sluice exited with 0 after SIGTERM" in said
