"""The Sluice Kubernetes operator (kopf): reconciles CdcPipeline resources into SparkApplications.

The control plane arrives with its own issue; the contract it will honour is crds/.
"""
