"""Which servers a bench runs on: as users run them (durable, the packages' defaults, the
binlog on as CDC needs it) unless `--servers tuned` asks for the test suite's fast ones."""

from __future__ import annotations

import argparse

from tests.harness.services import SETTINGS, server_settings


def add_servers_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--servers",
        choices=SETTINGS,
        default="default",
        help="default: durable, default-configured servers; tuned: the test suite's (no fsync, a 512 MiB pool)",
    )


def announce(settings: str, mariadb, postgresql=None) -> None:  # noqa: ANN001
    """Prints what the servers run with, as they report it, before any figure."""
    print(f"servers ({settings}): {server_settings(mariadb, postgresql)}", flush=True)
