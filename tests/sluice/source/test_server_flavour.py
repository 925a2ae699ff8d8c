"""The statements Sluice sends a server follow its flavour and version: MySQL 8.4 removed
the MASTER and SLAVE spellings, which MariaDB and older MySQL releases keep."""

from __future__ import annotations

import pytest

from sluice.source.server_flavour import ServerFlavour


@pytest.mark.parametrize(
    ("server", "named", "status", "replicas", "checksum"),
    [
        ("10.11.19-MariaDB-0+deb12u1-log", "MariaDB 10.11.19", "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "@master"),
        ("5.5.5-10.6.2-MariaDB", "MariaDB 10.6.2", "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "@master"),
        ("5.7.44-log", "MySQL 5.7.44", "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "@master"),
        ("8.0.22", "MySQL 8.0.22", "SHOW MASTER STATUS", "SHOW REPLICAS", "@master"),
        ("8.0.36-0ubuntu0.22.04.1", "MySQL 8.0.36", "SHOW MASTER STATUS", "SHOW REPLICAS", "@source"),
        ("8.2.0", "MySQL 8.2.0", "SHOW BINARY LOG STATUS", "SHOW REPLICAS", "@source"),
        ("8.4.3", "MySQL 8.4.3", "SHOW BINARY LOG STATUS", "SHOW REPLICAS", "@source"),
        ("9.1.0-commercial", "MySQL 9.1.0", "SHOW BINARY LOG STATUS", "SHOW REPLICAS", "@source"),
    ],
)
def test_each_server_is_asked_in_the_words_it_takes(server, named, status, replicas, checksum):
    flavour = ServerFlavour.parse(server)
    assert str(flavour) == named
    assert flavour.binary_log_status == status
    assert flavour.replicas == replicas
    assert flavour.checksum_variable == f"{checksum}_binlog_checksum"
    assert flavour.heartbeat_variable == f"{checksum}_heartbeat_period"
