"""The harness's scratch directories: a bench's go when it ends well (its servers leave
gigabytes of binlog and WAL: 65 GB of them had filled this machine's disk), and stay, with
their server logs, when it fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
BENCH = """
import sys
from tests.harness.services import scratch_directory
base = scratch_directory("sluice-scratch-test-", removed_at_exit=True)
(base / "server.log").write_text("what the servers said")
print(base, flush=True)
if sys.argv[1] == "fails":
    raise RuntimeError("the bench failed")
"""


def _run(outcome: str) -> tuple[Path, subprocess.CompletedProcess]:
    ran = subprocess.run([sys.executable, "-c", BENCH, outcome], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return Path(ran.stdout.strip()), ran


def test_a_bench_that_ends_well_leaves_no_scratch_directory():
    base, ran = _run("ends")
    assert ran.returncode == 0, ran.stderr
    assert base.name.startswith("sluice-scratch-test-") and not base.exists()


def test_a_failed_bench_keeps_its_scratch_directory_and_says_where():
    base, ran = _run("fails")
    try:
        assert ran.returncode == 1 and (base / "server.log").exists()
        assert f"kept for inspection: {base}" in ran.stderr
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=True)
