"""The Sluice Kubernetes operator (kopf): reconciles CdcPipeline resources into SparkApplications.

Built like the Flink Kubernetes Operator, observe -> reconcile -> act, each a small module
testable without kopf: `handlers` wires kopf's events to one pass, `observe` reads the
CdcPipeline's world, `reconcile` decides (pure), `act` writes status and owned objects.
What it renders: the CRD (crd), from the option tables the local runner checks definitions
against; the spec read into a definition (pipeline_spec); the SparkApplication in its
snapshot and streaming shapes and the pipeline ConfigMap (spark_application); the driver's
identity (rbac); owner references and labels (owned); conditions; metrics and health.
"""
