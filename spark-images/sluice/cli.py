"""The `sluice` command line: `sluice run|verify|resnapshot PIPELINE.yaml`, `sluice status`."""

from __future__ import annotations

import argparse
import faulthandler
import logging
import signal
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from sluice.errors import TROUBLESHOOTING, DefinitionError, SluiceError
from sluice.pipeline.definition import PipelineDefinition, load_definition

if TYPE_CHECKING:
    from sluice.verify.verifier import VerifiedSink, Verifier

EXIT_FAILED = 1
EXIT_BAD_DEFINITION = 2
EXIT_MISMATCH = 3  # verify: the target differs from the source


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sluice", description="MySQL/MariaDB CDC on Apache Spark")
    parser.add_argument("--version", action="version", version=f"sluice {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a pipeline definition with local Spark")
    run.add_argument("pipeline", type=Path, help="pipeline YAML (Flink CDC 3 keys)")
    run.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where progress is kept between runs (default: .sluice/<pipeline name>)",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on this port, at /metrics (default: not served; 0: any free port)",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="log more")
    verify = commands.add_parser(
        "verify", help="compare a streaming pipeline's target with its source, range by range, while it streams"
    )
    verify.add_argument("pipeline", type=Path, help="pipeline YAML (Flink CDC 3 keys)")
    verify.add_argument("--table", action="append", metavar="DB.TABLE", help="only this table (repeatable)")
    verify.add_argument(
        "--range",
        action="append",
        metavar="'DB.TABLE [START, END)'",
        help="only this range, as a verify run printed it (repeatable)",
    )
    verify.add_argument("--repair", action="store_true", help="read each range that differs again")
    verify.add_argument(
        "--pace",
        type=float,
        default=0.0,
        help="after each range, wait PACE times as long as it took (1.0: work half the time; default 0)",
    )
    verify.add_argument("-v", "--verbose", action="store_true", help="log more")
    resnapshot = commands.add_parser(
        "resnapshot", help="read tables of a streaming pipeline again, range by range, while it streams"
    )
    resnapshot.add_argument("pipeline", type=Path, help="pipeline YAML (Flink CDC 3 keys)")
    resnapshot.add_argument("--table", action="append", metavar="DB.TABLE", required=True, help="repeatable")
    resnapshot.add_argument(
        "--where", metavar="CONDITION", help="only the rows matching this SQL condition at the source (keyed tables)"
    )
    resnapshot.add_argument("-v", "--verbose", action="store_true", help="log more")
    for command in (verify, resnapshot):
        command.add_argument(
            "--state-dir", type=Path, default=None, help="not needed: the pipeline's target keeps its records"
        )
    check = commands.add_parser(
        "check", help="check the source, the tables and the target before a run, changing nothing"
    )
    check.add_argument("pipeline", type=Path, help="pipeline YAML (Flink CDC 3 keys)")
    check.add_argument(
        "--scan-rows",
        type=int,
        default=100_000,
        metavar="N",
        help="look for values a type rule rewrites in each table's first N rows (0: all; default 100000)",
    )
    check.add_argument("--strict", action="store_true", help="fail on warnings too")
    check.add_argument("--json", action="store_true", help="the findings as JSON, for tools")
    check.add_argument("-v", "--verbose", action="store_true", help="log more")
    status = commands.add_parser(
        "status", help="where a pipeline is (phase, position, lag, snapshot per table, last error), from its state"
    )
    status.add_argument("pipeline", type=Path, nargs="?", help="pipeline YAML (for its default --state-dir)")
    status.add_argument("--state-dir", type=Path, default=None, help="the run's state directory")
    status.add_argument("--json", action="store_true", help="one JSON document, for tools")
    status.add_argument("-v", "--verbose", action="store_true", help="log more")
    return parser


def _version() -> str:
    """The installed distribution's (pyproject.toml's version)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sluice")
    except PackageNotFoundError:  # run from the source tree without an install
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # `kill -USR1` prints every thread's stack to stderr, as jstack does for the JVM: what a
    # run that seems stuck is waiting on, without stopping it.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        definition = _definition(args)
    except DefinitionError as exc:
        print(f"sluice: error: {exc} (see {exc.see})", file=sys.stderr)
        return EXIT_BAD_DEFINITION
    try:
        if args.command == "status":
            status(args, definition)
        elif args.command == "check":
            return check(args, definition)
        elif args.command == "run":  # these three require the pipeline file (argparse)
            run(args, definition)
        elif verify_or_resnapshot(args, definition) is False:
            return EXIT_MISMATCH
    except SluiceError as exc:
        print(f"sluice: error: {exc} (see {exc.see})", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("sluice: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug of ours: still one line, the trace on request
        if args.verbose:
            traceback.print_exc()
        first = (str(exc).strip().splitlines() or [""])[0]
        hint = "" if args.verbose else " (run with -v for the stack trace, and report it)"
        hint += f" (see {TROUBLESHOOTING}#internal-error)"
        print(f"sluice: internal error: {type(exc).__name__}: {first}{hint}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _definition(args: argparse.Namespace) -> PipelineDefinition | None:
    if args.command != "status":
        return load_definition(args.pipeline)
    if args.state_dir is not None or args.pipeline is None:
        return None
    return load_definition(args.pipeline, env=_NoSecrets())  # for its name: no password is needed


class _NoSecrets(dict):
    """Every ${VARIABLE} of a definition read for its name only, as empty."""

    def __contains__(self, name: object) -> bool:
        return True

    def __missing__(self, name: str) -> str:
        return ""


def run(args: argparse.Namespace, definition: PipelineDefinition) -> None:
    from sluice.runtime.pipeline_metrics import PipelineMetrics
    from sluice.runtime.pipeline_runner import PipelineRunner, approvals_from_file
    from sluice.state.state_store import DirectoryStateStore

    state_dir = args.state_dir or Path(".sluice") / definition.name
    metrics = PipelineMetrics(definition.name)
    if args.metrics_port is not None:
        try:
            port = metrics.serve(args.metrics_port)
        except OSError as exc:
            raise SluiceError(f"--metrics-port {args.metrics_port}: cannot listen there: {exc.strerror}") from exc
        print(f"metrics: http://localhost:{port}/metrics", file=sys.stderr, flush=True)
    store = DirectoryStateStore(state_dir)
    runner = PipelineRunner(
        definition,
        store,
        approvals_from_file(args.pipeline, definition),
        master=f"local[{definition.parallelism}]",
        metrics=metrics,
    )
    store.report_running()
    try:
        runner.run()
    except Exception as exc:
        store.report_failure(
            str(exc) if isinstance(exc, SluiceError) else f"internal error: {type(exc).__name__}: {exc}"
        )
        raise
    finally:
        store.report_stopped()


def check(args: argparse.Namespace, definition: PipelineDefinition) -> int:
    """One line per finding; exit 0 when nothing is an error (nor, with --strict, a warning)."""
    import json

    from sluice.runtime.preflight import check_pipeline

    findings = check_pipeline(definition, args.scan_rows)
    if args.json:
        print(json.dumps([finding.to_json() for finding in findings], indent=2))
    else:
        print("\n".join(finding.line() for finding in findings))
    failing = {"error", "warning"} if args.strict else {"error"}
    failed = [finding for finding in findings if finding.level in failing]
    if failed and not args.json:
        print(f"sluice check: {len(failed)} finding{'s' if len(failed) > 1 else ''} to fix", file=sys.stderr)
    return EXIT_FAILED if failed else 0


def status(args: argparse.Namespace, definition: PipelineDefinition | None) -> None:
    import json

    from sluice.state.status_report import run_status, status_lines

    if args.state_dir is None and definition is None:
        raise SluiceError("sluice status: give the pipeline file or its --state-dir")
    found = run_status(args.state_dir or Path(".sluice") / definition.name)  # type: ignore[union-attr]
    print(json.dumps(found, indent=2) if args.json else "\n".join(status_lines(found)))


def verify_or_resnapshot(args: argparse.Namespace, definition: PipelineDefinition) -> bool:
    """False if verify found ranges that differ (and did not repair them)."""
    from sluice.sink.factory import create_sink
    from sluice.verify.verifier import VerifiedSink, Verifier

    if definition.routing.active:
        raise SluiceError(
            f"sluice {args.command}: pipelines with route or transform blocks are not verified or read again by "
            "range yet (their targets hold the query over the source, not its rows)"
        )
    sink = create_sink(definition)
    if not isinstance(sink, VerifiedSink):
        raise SluiceError(
            f"sluice {args.command}: sink.type {definition.sink.type} is not supported (jdbc, iceberg and delta are)"
        )
    with Verifier(definition, sink, definition.source.endpoint()) as verifier:
        return _verify_or_resnapshot(args, definition, sink, verifier)


def _verify_or_resnapshot(
    args: argparse.Namespace, definition: PipelineDefinition, sink: VerifiedSink, verifier: Verifier
) -> bool:
    from sluice.sink.lakehouse.sink import LakehouseSink

    tables = verifier.tables(args.table)
    if isinstance(sink, LakehouseSink) and (args.command == "resnapshot" or args.repair):
        # A lakehouse table takes commits from a run of the pipeline only: this is one.
        sink.prepare([verifier.state.targets[t] for t in verifier.tables()])
        print(
            f"sluice {args.command}: committing as run {sink.epoch} of pipeline '{definition.name}'; a run still going "
            "is fenced off and stops (on Kubernetes, ask its driver instead: spec.verification, spec.resnapshots)",
            file=sys.stderr,
        )
    if args.command == "resnapshot":
        verifier.resnapshot(tables, args.where)
        return True
    ranges = verifier.named_ranges(args.range) if args.range else None
    result = verifier.verify(tables, repair=args.repair, pace=args.pace, ranges=ranges)
    for mismatch in result.mismatches:
        print(f"mismatch: {mismatch.describe()}")
    for mismatch in result.repaired:
        print(f"repaired: {mismatch.describe()}")
    for table_id in result.skipped:
        print(f"skipped: {table_id} changed while it was compared")
    print(f"{result.checked} ranges checked, {len(result.mismatches)} differ, {len(result.repaired)} repaired")
    return result.equal


if __name__ == "__main__":
    sys.exit(main())
