"""Sluice: MySQL/MariaDB change-data-capture on Apache Spark."""

__version__ = "0.1.0"
