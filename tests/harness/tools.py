"""The command-line tools tests drive as users would: kubectl and helm from `make tools`."""

from __future__ import annotations

from pathlib import Path

TOOLS = Path(__file__).parents[2] / ".tools" / "bin"
KUBECTL = TOOLS / "kubectl"
HELM = TOOLS / "helm"
