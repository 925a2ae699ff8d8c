"""The `sluice` command line: `sluice run PIPELINE.yaml [--state-dir DIR]`."""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from pathlib import Path

from sluice.errors import DefinitionError, SluiceError
from sluice.pipeline.definition import load_definition

EXIT_FAILED = 1
EXIT_BAD_DEFINITION = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sluice", description="MySQL/MariaDB CDC on Apache Spark")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a pipeline definition with local Spark")
    run.add_argument("pipeline", type=Path, help="pipeline YAML (Flink CDC 3 keys)")
    run.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where progress is kept between runs (default: .sluice/<pipeline name>)",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="log more")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        definition = load_definition(args.pipeline)
    except DefinitionError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        return EXIT_BAD_DEFINITION
    state_dir = args.state_dir or Path(".sluice") / definition.name
    from sluice.runtime.pipeline_runner import PipelineRunner, approvals_from_file
    from sluice.state.state_store import DirectoryStateStore

    try:
        runner = PipelineRunner(
            definition,
            DirectoryStateStore(state_dir),
            approvals_from_file(args.pipeline, definition),
            master=f"local[{definition.parallelism}]",
        )
        runner.run()
    except SluiceError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("sluice: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug of ours: still one line, the trace on request
        if args.verbose:
            traceback.print_exc()
        first = (str(exc).strip().splitlines() or [""])[0]
        hint = "" if args.verbose else " (run with -v for the stack trace, and report it)"
        print(f"sluice: internal error: {type(exc).__name__}: {first}{hint}", file=sys.stderr)
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
