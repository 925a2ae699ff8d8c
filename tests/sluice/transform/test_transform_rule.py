"""Transform rules: the examples of Flink CDC's transform documentation compile and do
what it says, and each thing Sluice cannot take is refused at start, naming the rule, the
expression and its position."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
import yaml

from sluice.errors import DefinitionError
from sluice.source.schema import Column, TableSchema
from sluice.transform.table_transform import TableTransform
from sluice.transform.transform_rule import parse_transforms, rule_for

WEB_ORDER = TableSchema(
    "mydb",
    "web_order",
    (
        Column("id", "int", "int(11)", False),
        Column("order_id", "varchar", "varchar(32)", False, char_length=32),
        Column("product_name", "varchar", "varchar(64)", True, char_length=64),
        Column("province", "varchar", "varchar(16)", True, char_length=16),
        Column("created", "datetime", "datetime", True),
    ),
    ("id",),
    "id",
)
ROW = (1001, "o-17", "Lamp", "shanghai", datetime(2024, 5, 6, 7, 8, 9))


def compiled(text: str, schema: TableSchema = WEB_ORDER):
    rules = parse_transforms(yaml.safe_load(text))
    rule = rule_for(rules, schema.database, schema.table)
    assert rule is not None
    return TableTransform(rule, schema)


def test_computed_columns():
    transform = compiled(
        """
- source-table: mydb.web_order
  projection: id, order_id, UPPER(product_name) as product_name, localtimestamp as new_timestamp
  description: append calculated columns based on source table
"""
    )
    assert transform.target().column_names == ("id", "order_id", "product_name", "new_timestamp")
    row = transform.project(ROW, transform.row_meta())
    assert row[:3] == (1001, "o-17", "LAMP") and isinstance(row[3], datetime)
    assert not transform.deterministic


def test_metadata_columns():
    transform = compiled(
        """
- source-table: mydb.web_order
  projection: id, order_id, __namespace_name__ || '.' || __schema_name__ || '.' || __table_name__ identifier_name
"""
    )
    # A MySQL table has no namespace: NULL, and NULL || ... is NULL (Flink CDC's Java concatenation prints "null").
    assert transform.project(ROW, transform.row_meta()) == (1001, "o-17", None)
    transform = compiled(
        """
- source-table: mydb.web_order
  projection: \\*, __schema_name__ || '.' || __table_name__ AS identifier_name, __data_event_type__ AS type
"""
    )
    assert transform.project(ROW, transform.row_meta("-U"))[-2:] == ("mydb.web_order", "-U")


def test_a_wildcard_projects_every_column_and_a_column_named_again_takes_its_computed_value():
    text = """
- source-table: mydb.web_order
  projection: \\*, UPPER(product_name) as product_name
- source-table: mydb.app_order
  projection: UPPER(product_name) as product_name, *
"""
    transform = compiled(text)
    assert transform.target().column_names == WEB_ORDER.column_names
    assert transform.project(ROW, transform.row_meta())[2] == "LAMP"
    app_order = TableSchema("mydb", "app_order", WEB_ORDER.columns, ("id",), "id")
    assert compiled(text, app_order).target().column_names[0] == "product_name"


def test_filters_on_source_and_computed_columns():
    transform = compiled(
        """
- source-table: mydb.web_order
  filter: id > 10 AND order_id > 'o-1'
"""
    )
    assert transform.image(ROW, transform.row_meta()) is not None
    assert not transform.image((5, *ROW[1:]), transform.row_meta())
    transform = compiled(
        """
- source-table: mydb.web_order
  projection: id, order_id, UPPER(province) as new_province
  filter: new_province = 'SHANGHAI'
"""
    )
    assert transform.image(ROW, transform.row_meta()) is not None
    assert not transform.image((*ROW[:3], "beijing", ROW[4]), transform.row_meta())


def test_a_string_literal_compared_with_a_timestamp_is_read_as_one():
    transform = compiled(
        "- {source-table: mydb.web_order, filter: \"created >= '2024-05-01' AND created < '2024-06-01 00:00:00'\"}"
    )
    assert transform.image(ROW, transform.row_meta()) is not None
    assert not transform.image((*ROW[:4], datetime(2024, 6, 1)), transform.row_meta())


def test_primary_keys_and_partition_keys_and_table_options():
    transform = compiled(
        """
- source-table: mydb.web_order
  projection: id, order_id, UPPER(product_name) as product_name
  primary-keys: order_id, product_name
  partition-keys: product_name
  table-options: comment=web order
"""
    )
    target = transform.target()
    assert target.primary_key == ("order_id", "product_name")
    assert not target.column("product_name").nullable  # key columns are NOT NULL, as Flink CDC makes them
    assert transform.rule.partition_keys == ("product_name",) and transform.rule.table_options == {
        "comment": "web order"
    }
    options = parse_transforms(
        [{"source-table": "a.b", "table-options": "sequence.field=gxsj,jjsj;x=y", "table-options.delimiter": ";"}]
    )
    assert options[0].table_options == {"sequence.field": "gxsj,jjsj", "x": "y"}


def test_the_first_matching_rule_applies():
    rules = parse_transforms(
        yaml.safe_load(
            """
- source-table: mydb.web_order
  projection: id, order_id
  filter: id > 1001
- source-table: mydb.\\.*
  projection: \\*, 'fallback' AS FALLBACK
"""
        )
    )
    assert rule_for(rules, "mydb", "web_order").index == 0
    assert rule_for(rules, "mydb", "other").index == 1
    assert rule_for(rules, "otherdb", "web_order") is None


def test_the_source_key_is_kept_under_a_new_name_and_dropped_with_its_column():
    assert compiled(
        "- {source-table: mydb.web_order, projection: 'id AS order_no, province'}"
    ).target().primary_key == ("order_no",)
    assert compiled("- {source-table: mydb.web_order, projection: 'order_id, province'}").target().primary_key == ()


def test_computed_column_types():
    target = compiled(
        "- {source-table: mydb.web_order, projection: 'id, id * 2.50 AS price, CHAR_LENGTH(order_id) AS n, "
        "CASE WHEN id > 1 THEN province END AS p, CAST(id AS DECIMAL(8, 2)) AS c, YEAR(created) AS y'}"
    ).target()
    types = {c.name: c.column_type for c in target.columns}
    assert types == {
        "id": "int(11)",
        "price": "decimal(14,2)",
        "n": "bigint",
        "p": "varchar(16)",
        "c": "decimal(8,2)",
        "y": "bigint",
    }
    assert target.column("p").nullable


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            {"projection": "id, SOUNDEX(province) AS s"},
            r"transform\[0\]\.projection: SOUNDEX\(province\) at character 5: SOUNDEX is not a function",
        ),
        (
            {"projection": "id, UPPER(id) AS u"},
            r"transform\[0\]\.projection \(mydb\.web_order\): UPPER\(id\) at character 5: "
            r"UPPER's argument 1 must be STRING, not INTEGER",
        ),
        (
            {"projection": "id + province AS x"},
            r"id \+ province at character 1: the right operand must be INTEGER or DECIMAL or FLOAT, not STRING",
        ),
        ({"projection": "id, nosuch AS x"}, r"nosuch at character 5: no column nosuch in the table"),
        ({"projection": "id, UPPER(province)"}, r"'UPPER\(province\)' needs a name: add AS <column>"),
        ({"filter": "id + 1"}, r"transform\[0\]\.filter \(mydb\.web_order\): 'id \+ 1' is INTEGER, not a condition"),
        ({"filter": "province > 3"}, r"province > 3 at character 1: cannot compare STRING with INTEGER"),
        ({"filter": "created > 'soon'"}, r"'soon' is not a date or timestamp"),
        ({"filter": "id = "}, r"transform\[0\]\.filter: cannot parse 'id =' at character 4: an operand is missing"),
        (
            {"filter": "__data_event_type__ <> '-D'"},
            r"depends on the change, not the row \(__data_event_type__\)",
        ),
        ({"projection": "id", "primary-keys": "order_id"}, r"primary-keys: order_id is not a column of the projection"),
        (
            {"projection": "id,, order_id"},
            r"transform\[0\]\.projection: 'id,, order_id' has an empty item between commas",
        ),
        (
            {"projection": "id", "converter-after-transform": "HARD_DELETE"},
            r"converter-after-transform: 'HARD_DELETE' is not one of SOFT_DELETE",
        ),
        ({"projection": "id", "filters": "x"}, r"transform\[0\]\.filters: unknown key"),
    ],
)
def test_what_cannot_be_taken_is_refused_naming_rule_expression_and_position(rule, message):
    with pytest.raises(DefinitionError, match=message):
        TableTransform(parse_transforms([{"source-table": "mydb.web_order", **rule}])[0], WEB_ORDER)


def test_values_follow_sql_where_flink_cdc_java_code_differs():
    transform = compiled(
        "- {source-table: mydb.web_order, projection: \"id / 0 AS q, product_name LIKE 'La%' AS l, "
        "CAST(id AS DECIMAL(6,2)) / 3 AS d, CASE WHEN province IS NULL THEN 'none' ELSE province END AS p\"}"
    )
    assert transform.project(ROW, transform.row_meta()) == (None, True, Decimal("333.66"), "shanghai")
