"""`make demo`, the README's first command, shows what it says it shows: the snapshot, live
changes and a schema change reaching a real PostgreSQL, and a clean stop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.demo import demo_problems

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[2]


def test_the_demo_snapshots_streams_and_follows_a_schema_change():
    ran = subprocess.run(
        [sys.executable, "-m", "tests.harness.demo"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert demo_problems(ran.stdout) == [], ran.stdout[-3000:]
