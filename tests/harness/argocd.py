"""The argocd-cm snippet that installs Sluice's health check and actions, made from the
files under charts/argocd/resource_customizations (`make argocd-cm` writes it; a test
keeps it equal)."""

from __future__ import annotations

from pathlib import Path

import yaml

CUSTOMIZATION = (
    Path(__file__).parents[2] / "charts" / "argocd" / "resource_customizations" / "sluice.io" / "CdcPipeline"
)
HEADER = """\
# Argo CD health check and Suspend/Resume actions for Sluice's CdcPipeline. Merge into the
# argocd-cm ConfigMap (or the argo-cd chart's `configs.cm`), for example:
#   kubectl -n argocd patch configmap argocd-cm --patch-file charts/argocd/argocd-cm.yaml
# Made from resource_customizations/sluice.io/CdcPipeline by `make argocd-cm`: do not edit.
"""


class _Literal(str):
    """A block scalar (|) in the output, as argocd-cm is usually written."""


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


yaml.SafeDumper.add_representer(_Literal, _literal)


def argocd_cm() -> str:
    actions = CUSTOMIZATION / "actions"
    definitions = [
        {"name": path.parent.name, "action.lua": _Literal(path.read_text())}
        for path in sorted(actions.glob("*/action.lua"))
    ]
    action_config = {"discovery.lua": _Literal((actions / "discovery.lua").read_text()), "definitions": definitions}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd", "labels": {"app.kubernetes.io/part-of": "argocd"}},
        "data": {
            "resource.customizations.health.sluice.io_CdcPipeline": _Literal(
                (CUSTOMIZATION / "health.lua").read_text()
            ),
            "resource.customizations.actions.sluice.io_CdcPipeline": _Literal(
                yaml.safe_dump(action_config, sort_keys=False, width=200)
            ),
        },
    }
    return HEADER + yaml.safe_dump(config_map, sort_keys=False, width=200)


if __name__ == "__main__":
    print(argocd_cm(), end="")
