"""The MySQL/MariaDB source: connections, offsets and table schemas."""
