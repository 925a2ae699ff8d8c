"""Real MariaDB and PostgreSQL servers for tests, the demo and the benchmarks."""
