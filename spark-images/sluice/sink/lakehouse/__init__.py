"""Lakehouse targets: Apache Iceberg and Delta Lake tables, upserted exactly once."""
