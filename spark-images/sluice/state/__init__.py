"""Where a local run keeps its progress between runs (on Kubernetes: the CR's status)."""
