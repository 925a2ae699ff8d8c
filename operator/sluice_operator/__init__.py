"""The Sluice Kubernetes operator (kopf): reconciles CdcPipeline resources into SparkApplications.

Built like the Flink Kubernetes Operator, observe -> validate -> reconcile -> act, each a
small module testable without kopf. So far: the CRD, made from the option tables the
local runner checks definitions against (crd), reading a CdcPipeline's spec (pipeline_spec),
the conditions it reports (conditions), and what it owns: the SparkApplication in its
snapshot and streaming shapes and the pipeline ConfigMap (spark_application), the
driver's identity (rbac), owner references and labels (owned). The reconcile loop, the
status state store and the Spark Operator test double come next (issue 10).
"""
