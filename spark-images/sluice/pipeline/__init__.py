"""The pipeline definition: Flink CDC 3 pipeline-YAML, parsed and validated."""
