"""Failpoints: the process SIGKILLs itself at a named instant, for crash tests.

A real crash lands anywhere; the instants between two steps of a protocol are too short
for a test to hit from outside. `SLUICE_FAILPOINT=<name>` in the environment kills the
process the moment it reaches that name; without it, a failpoint costs one dict lookup.
"""

from __future__ import annotations

import os
import signal


def failpoint(name: str) -> None:
    if os.environ.get("SLUICE_FAILPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
