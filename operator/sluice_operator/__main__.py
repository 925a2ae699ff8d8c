"""`python -m sluice_operator [--namespace NS ...]`: runs the operator (kopf, standalone:
one replica). Watches all namespaces unless given some."""

from __future__ import annotations

import argparse
import logging

import kopf


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sluice-operator")
    parser.add_argument("--namespace", action="append", default=[], help="watch only these (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    from sluice_operator import handlers  # registers the handlers with kopf

    handlers.watch_namespaces(args.namespace)

    kopf.run(standalone=True, clusterwide=not args.namespace, namespaces=args.namespace)


if __name__ == "__main__":
    main()
