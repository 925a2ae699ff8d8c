"""Decisions shared by the local runner and the operator: pure Python, no pyspark."""
