"""The Spark driver of a CdcPipeline on Kubernetes: the SparkApplication's main file runs
this. The same runner as `sluice run`, with the state in the CdcPipeline's status and the
schema-change approvals from its spec; Spark is the one spark-submit started.

    driver.py --pipeline /etc/sluice/pipeline.yaml --cdc-pipeline NAMESPACE/NAME

Passwords come from the environment (SLUICE_SOURCE_PASSWORD, SLUICE_SINK_PASSWORD), which
the SparkApplication fills from Secrets; the mounted definition names them as ${...}.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from sluice.errors import SluiceError
from sluice.pipeline.definition import load_definition

EXIT_FAILED = 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sluice-driver")
    parser.add_argument("--pipeline", type=Path, required=True, help="the mounted pipeline definition")
    parser.add_argument("--cdc-pipeline", required=True, help="NAMESPACE/NAME of the CdcPipeline")
    parser.add_argument("--status-interval", type=float, default=3.0, help="seconds between progress writes")
    parser.add_argument("--metrics-port", type=int, default=None, help="serve Prometheus metrics on this port")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from sluice.runtime.pipeline_metrics import PipelineMetrics
    from sluice.runtime.pipeline_runner import PipelineRunner
    from sluice.state.cdc_pipeline_store import StateFenced, status_state_store

    store = status_state_store(args.cdc_pipeline, args.status_interval)
    try:
        definition = load_definition(args.pipeline, env=os.environ)
        metrics = PipelineMetrics(definition.name)
        if args.metrics_port is not None:
            try:
                metrics.serve(args.metrics_port)
            except OSError as exc:  # the pipeline's data comes first
                logging.getLogger(__name__).warning("metrics not served: port %d: %s", args.metrics_port, exc)
        runner = PipelineRunner(
            definition,
            store,
            store.approved_schema_changes,
            master=None,
            requests=store,
            metrics=metrics,
            preflight=True,
        )
        runner.run()
        store.flush()
    except StateFenced as exc:
        print(f"sluice: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except SluiceError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        store.report_failure(str(exc), retriable=exc.transient, reason=exc.reason)
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
