"""User-defined functions (pipeline.user-defined-function): Python classes in Flink CDC's
convention, typed by their annotations, called by name in projections and filters; what
cannot be loaded or called is refused naming the function, and a function that raises
stops the pipeline naming it, the rule, the table and the row's key."""

from __future__ import annotations

import textwrap
from decimal import Decimal

import pytest
import yaml

from sluice.errors import DefinitionError
from sluice.source.schema import Column, TableSchema
from sluice.transform.table_transform import TableTransform
from sluice.transform.transform_rule import parse_transforms, rule_for
from sluice.transform.user_functions import UserFunction, UserFunctionFailed

ORDERS = TableSchema(
    "shop",
    "orders",
    (
        Column("id", "int", "int(11)", False),
        Column("qty", "int", "int(11)", True),
        Column("note", "varchar", "varchar(32)", True, char_length=32),
    ),
    ("id",),
    "id",
)
MODULE = """
from decimal import Decimal


class AddOne:
    def eval(self, value: int) -> int:
        return value + 1


class Format:
    def open(self) -> None:
        self.opened = True

    def eval(self, pattern: str, *values) -> str:
        return pattern % tuple("null" if v is None else v for v in values)


class Price:
    def eval(self, qty: int) -> Decimal:
        return Decimal(qty) / 4


class Refuses:
    def eval(self, value: int) -> int:
        raise ValueError(f"cannot take {value}")


class Untyped:
    def eval(self, value):
        return value
"""


@pytest.fixture
def functions(tmp_path, monkeypatch):
    """Every class of MODULE, by its name in lower case, from a file beside a pipeline."""
    (tmp_path / "shop_functions.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))  # removed again after the test
    names = ("AddOne", "Format", "Price", "Refuses", "Untyped")
    return [UserFunction(n.lower(), f"shop_functions.{n}", str(tmp_path)) for n in names]


def compiled(projection: str, functions, filter_: str = ""):
    rule = {"source-table": "shop.orders", "projection": projection, **({"filter": filter_} if filter_ else {})}
    rules = parse_transforms(yaml.safe_load(yaml.safe_dump([rule])), "UTC", functions)
    return TableTransform(rule_for(rules, "shop", "orders"), ORDERS)


def test_a_function_is_called_by_name_in_a_projection_and_typed_by_its_annotations(functions):
    transform = compiled("id, addone(qty) AS more, FORMAT('%s/%s', note, qty) AS label, price(qty) AS p", functions)
    assert transform.project((1, 7, "x"), transform.row_meta()) == (1, 8, "x/7", Decimal("1.75"))
    assert transform.project((2, 3, None), transform.row_meta())[2] == "null/3"
    types = {c.name: c.column_type for c in transform.target().columns}
    assert types["more"] == "bigint" and types["label"] == "longtext" and types["p"] == "decimal(38,18)"


def test_a_function_may_decide_a_filter(functions):
    transform = compiled("id", functions, filter_="addone(qty) > 5")
    assert transform.keeps((1, 5, None), transform.row_meta())
    assert not transform.keeps((1, 4, None), transform.row_meta())


def test_a_function_that_raises_names_itself_the_rule_the_table_and_the_row(functions):
    transform = compiled("id, refuses(qty) AS r", functions)
    with pytest.raises(UserFunctionFailed) as failed:
        transform.project((42, 3, None), transform.row_meta())
    assert str(failed.value) == (
        "transform[0].projection (shop.orders, id=42): user-defined function refuses failed: ValueError: cannot take 3"
    )


@pytest.mark.parametrize(
    ("projection", "message"),
    [
        ("id, untyped(qty) AS u", r"untyped \(shop_functions\.Untyped\): annotate eval's return type"),
        ("id, addone(note) AS n", r"addone's argument 1 must be INTEGER or BOOLEAN, not STRING"),
        ("id, addone(qty, qty) AS n", r"addone takes 1 argument\(s\), not 2"),
        ("id, nosuch(qty) AS n", r"NOSUCH is not a function Sluice's transform has"),
    ],
)
def test_what_cannot_be_called_is_refused_naming_the_function(functions, projection, message):
    with pytest.raises(DefinitionError, match=message):
        compiled(projection, functions)


def test_a_module_that_cannot_be_imported_is_named(tmp_path):
    missing = [UserFunction("gone", "no_such_module.Gone", str(tmp_path))]
    with pytest.raises(DefinitionError, match=r"gone \(no_such_module\.Gone\): cannot import no_such_module"):
        compiled("id, gone(qty) AS g", missing)
