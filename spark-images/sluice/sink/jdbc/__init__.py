"""JDBC targets: PostgreSQL and MySQL/MariaDB."""
