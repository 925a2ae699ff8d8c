"""Route rules read as Flink CDC 3.6 reads them: the examples of its route documentation,
capture references, replace-symbol and the route modes."""

from __future__ import annotations

import pytest
import yaml

from sluice.errors import DefinitionError
from sluice.route.route_rule import parse_routes
from sluice.source.table_selector import table_list_regex


def routes(text: str, mode: str = "ALL_MATCH"):
    return parse_routes(yaml.safe_load(text), mode)


def test_one_table_to_one_table():
    router = routes(
        """
- source-table: mydb.web_order
  sink-table: mydb.ods_web_order
  description: sync table to one destination table with given prefix ods_
"""
    )
    assert router.route("mydb", "web_order") == [("mydb", "ods_web_order")]
    assert router.route("mydb", "web_orders") == [("mydb", "web_orders")]  # no rule: its own name


def test_sharded_tables_to_one_table():
    router = routes(
        """
- source-table: mydb.\\.*
  sink-table: mydb.ods_web_order
  description: sync sharding tables to one destination table
"""
    )
    assert {router.route("mydb", t)[0] for t in ("web_order_01", "web_order_02")} == {("mydb", "ods_web_order")}
    assert router.route("otherdb", "web_order_01") == [("otherdb", "web_order_01")]


def test_many_rules():
    router = routes(
        """
- source-table: mydb.orders
  sink-table: ods_db.ods_orders
- source-table: mydb.shipments
  sink-table: ods_db.ods_shipments
- source-table: mydb.products
  sink-table: ods_db.ods_products
"""
    )
    assert router.route("mydb", "shipments") == [("ods_db", "ods_shipments")]
    assert router.route("mydb", "products") == [("ods_db", "ods_products")]


def test_replace_symbol_stands_for_the_source_table_name():
    router = routes(
        """
- source-table: source_db.\\.*
  sink-table: sink_db.<>
  replace-symbol: <>
  description: route all tables in source_db to sink_db
"""
    )
    assert router.route("source_db", "XXX") == [("sink_db", "XXX")]


def test_capture_groups_are_referenced_by_number():
    router = routes(
        """
- source-table: db_(\\.*).(\\.*)_tbl
  sink-table: sink_db_$1.sink_table_$2
"""
    )
    assert router.route("db_foo", "bar_tbl") == [("sink_db_foo", "sink_table_bar")]


def test_the_table_list_syntax_becomes_one_regex_over_the_table_id():
    assert table_list_regex("db\\.*.tbl\\.*") == "db.*\\.tbl.*"
    assert table_list_regex("a.b, c.d") == "a\\.b|c\\.d"


def test_all_match_gives_every_match_and_first_match_the_first():
    text = """
- source-table: app.orders
  sink-table: ods.orders
- source-table: app.\\.*
  sink-table: ods.everything
"""
    assert routes(text).route("app", "orders") == [("ods", "orders"), ("ods", "everything")]
    assert routes(text, "FIRST_MATCH").route("app", "orders") == [("ods", "orders")]
    assert routes(text, "FIRST_MATCH").route("app", "users") == [("ods", "everything")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- sink-table: a.b", r"route\[0\]\.source-table: required"),
        ("- source-table: a.b", r"route\[0\]\.sink-table: required"),
        ("- {source-table: a.b, sink-table: c.d, sink: x}", r"route\[0\]\.sink: unknown key"),
        ("- {source-table: 'a.(b', sink-table: c.d}", r"route\[0\]\.source-table: 'a\.\(b' is not a valid regex"),
        ("- {source-table: 'a.(b)', sink-table: 'c.$2'}", r"refers to group \$2 but source-table 'a\.\(b\)' has 1"),
        (
            "- {source-table: 'a.(b)', sink-table: 'c.$1<>', replace-symbol: '<>'}",
            r"cannot be used with replace-symbol",
        ),
        ("- {source-table: 'a.b', sink-table: 'c.<>'}", r"set replace-symbol: <> to use it"),
        ("source-table: a.b", r"route: expected a list of rules"),
    ],
)
def test_bad_rules_are_refused_naming_the_rule_and_key(text, message):
    with pytest.raises(DefinitionError, match=message):
        routes(text)


def test_a_sink_table_that_is_not_database_dot_table_is_refused_when_a_table_meets_it():
    router = routes("- {source-table: 'a.b', sink-table: 'onlyname'}")
    with pytest.raises(DefinitionError, match=r"route\[0\]\.sink-table: 'onlyname' gives 'onlyname'"):
        router.route("a", "b")
