"""A MySQL 8.4 stand-in for the tests: a protocol front, in front of the test MariaDB, that
greets, authenticates and answers as MySQL 8.4 does (built from MySQL's documentation of
its client/server protocol and its 8.4 release notes, never from its code). See front.py."""
