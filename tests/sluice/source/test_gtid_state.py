"""The GTID set kept at every resume point, in both servers' forms. (MySQL's form is checked
here on its own: this machine has MariaDB only.)"""

from __future__ import annotations

from sluice.source.gtid_state import contains, gtid_state

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "8d3a2b1c-0000-11ee-8000-0242ac120002"


def test_mysql_set_grows_by_the_next_transaction_number():
    state = gtid_state(f"{A}:1-5", mariadb=False)
    state.add(f"{A}:6")
    assert str(state) == f"{A}:1-6"


def test_mysql_set_keeps_gaps_and_closes_them():
    state = gtid_state(f"{A}:1-3:7-9", mariadb=False)
    state.add(f"{A}:11")
    assert str(state) == f"{A}:1-3:7-9:11"
    state.add(f"{A}:10")
    state.add(f"{A}:4")
    state.add(f"{A}:5")
    state.add(f"{A}:6")
    assert str(state) == f"{A}:1-11"


def test_mysql_set_keeps_each_source_apart_and_reads_the_servers_own_text():
    state = gtid_state(f"{B}:1-2,\n{A.upper()}:1", mariadb=False)  # SHOW MASTER STATUS wraps lines
    state.add(f"{B}:3")
    state.add(f"{A}:2")
    assert str(state) == f"{A}:1-2,{B}:1-3"


def test_mariadb_position_holds_the_last_gtid_of_each_domain():
    state = gtid_state("0-1-42,9-22-3", mariadb=True)
    state.add("0-1-43")
    state.add("0-2-44")  # a new primary in the same domain
    state.add("5-7-1")
    assert str(state) == "0-2-44,5-7-1,9-22-3"


def test_an_empty_set_grows_from_nothing():
    mysql, mariadb = gtid_state("", mariadb=False), gtid_state("", mariadb=True)
    mysql.add(f"{A}:1")
    mariadb.add("0-1-1")
    assert (str(mysql), str(mariadb)) == (f"{A}:1", "0-1-1")


def test_a_set_contains_another_when_it_holds_each_of_its_transactions():
    assert contains(f"{A}:1-10,{B}:1-3", f"{A}:2-5,{B}:3")
    assert not contains(f"{A}:1-10", f"{A}:1-11") and not contains(f"{A}:1-10", f"{B}:1")
    assert contains("0-1-42,9-22-3", "0-2-40") and contains("0-2-44", "0-1-44")  # domains order, not servers
    assert not contains("0-1-42", "0-1-43") and not contains("0-1-42", "5-1-1")
    assert contains("", "") and contains("0-1-1", "")


def test_mysql_tagged_gtids_are_kept_per_tag_as_mysql_8_3_writes_them():
    """MySQL 8.3+ tags GTIDs (`uuid:tag:n`); a set lists a source's untagged intervals first,
    then each tag (lower case, in order) with its own (issue 59, point 2: int() of a tag
    stopped the reader)."""
    state = gtid_state(f"{A}:1-5:ETL:1-3:7,{B}:batch:2", mariadb=False)
    state.add(f"{A}:etl:4")
    state.add(f"{A}:6")
    state.add(f"{B}:1")
    assert str(state) == f"{A}:1-6:etl:1-4:7,{B}:1:batch:2"
    assert contains(str(state), f"{A}:etl:2-3") and not contains(str(state), f"{A}:etl:5")
    assert not contains(f"{A}:1-9", f"{A}:etl:1")  # a tagged transaction is not the untagged one
