"""The README's first command works on a fresh, minimal Debian: `make demo` there installs
everything it needs itself (Python's venv, a Java runtime, the servers, compilers and
headers) and shows the snapshot, live changes and a schema change. The machine is made
with debootstrap in a folder, as root (tests/harness/fresh_debian.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[2]


def test_make_demo_sets_up_everything_on_a_minimal_debian():
    command = [sys.executable, "-m", "tests.harness.fresh_debian"]
    if os.geteuid() != 0:  # debootstrap, chroot and mount need root, as `make system-deps` needs it for apt
        command = ["sudo", "-n", "--preserve-env=PYTHONPATH", *command]
    ran = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 0, said[-6000:]
    assert "make demo ran as the README says on a fresh Debian" in said
