"""User-defined functions (pipeline.user-defined-function): Python classes in Flink CDC's
convention, typed by their annotations, called by name in projections and filters; what
cannot be loaded or called is refused naming the function, and a function that raises
stops the pipeline naming it, the rule, the table and the row's key."""

from __future__ import annotations

import sys
import textwrap
import zipfile
from decimal import Decimal

import pytest
import yaml

from sluice.errors import DefinitionError
from sluice.source.schema import Column, TableSchema
from sluice.transform.table_transform import TableTransform
from sluice.transform.transform_rule import parse_transforms, rule_for
from sluice.transform.udf_entries import python_function
from sluice.transform.user_functions import (
    UserFunction,
    UserFunctionFailed,
    close_user_functions,
)

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
    assert transform.image((1, 5, None), transform.row_meta())
    assert not transform.image((1, 4, None), transform.row_meta())


def test_a_function_that_raises_names_itself_the_rule_the_table_and_the_row(functions):
    transform = compiled("id, refuses(qty) AS r", functions)
    with pytest.raises(UserFunctionFailed) as failed:
        transform.image((42, 3, None), transform.row_meta())
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


# -- Flink CDC's Python UDF form: python-code, python-files, python-executable ---------------

HELPERS = "def normalized(s):\n    return s.strip().lower()\n"
ZIPPED = "def doubled(x):\n    return x * 2\n"


def inline(name: str, code: str, **more) -> UserFunction:
    return python_function({"name": name, "python-code": textwrap.dedent(code), **more}, "")


def test_an_inline_python_function_is_its_code_eval_typed_by_its_annotations():
    """transform.md's "Python UDFs": one top-level eval with a return annotation."""
    normalize = inline(
        "py_normalize", "def eval(s: str) -> str:\n    return None if s is None else s.strip().lower()\n"
    )
    double = inline("py_double", "def eval(x: int) -> int:\n    return None if x is None else x * 2\n")
    transform = compiled("id, py_normalize(note) AS n, py_double(qty) AS d", [normalize, double])
    assert transform.project((1, 7, "  A@B.COM "), transform.row_meta()) == (1, "a@b.com", 14)
    assert transform.project((2, None, None), transform.row_meta()) == (2, None, None)
    types = {c.name: c.column_type for c in transform.target().columns}
    assert types["n"] == "longtext" and types["d"] == "bigint"


def test_python_files_directories_and_zip_archives_are_on_the_import_path(tmp_path):
    (tmp_path / "deps").mkdir()
    (tmp_path / "deps" / "text_helpers.py").write_text(HELPERS)
    with zipfile.ZipFile(tmp_path / "deps.zip", "w") as archive:
        archive.writestr("number_helpers.py", ZIPPED)
    code = """
        import number_helpers
        import text_helpers

        def eval(s: str, x: int) -> str:
            return text_helpers.normalized(s) + str(number_helpers.doubled(x))
    """
    files = (str(tmp_path / "deps"), str(tmp_path / "deps.zip"))
    both = inline("py_both", code, **{"python-files": files, "python-executable": sys.executable})
    transform = compiled("id, py_both(note, qty) AS v", [both])
    assert transform.project((1, 4, " X "), transform.row_meta()) == (
        1,
        "x8",
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"python-code": "def other(x: int) -> int:\n    return x\n"},
            r"py \(python-code\): the code has no top-level eval",
        ),
        ({"python-code": "def eval(x):\n    return x\n"}, r"py \(python-code\): annotate eval's return type"),
        ({"python-code": "def eval(x: int) -> int\n"}, r"py \(python-code\): the code does not compile: SyntaxError"),
        (
            {"python-code": "def eval(x: int) -> int:\n    return x\n", "python-files": ("/no/such/dir",)},
            r"py \(python-code\): python-files: /no/such/dir is not a directory or a \.zip archive",
        ),
        (
            {"python-code": "def eval(x: int) -> int:\n    return x\n", "python-executable": "/no/python3"},
            r"py \(python-code\): python-executable /no/python3 does not run",
        ),
    ],
)
def test_an_inline_function_that_cannot_be_loaded_is_refused_naming_it(entry, message):
    with pytest.raises(DefinitionError, match=message):
        compiled("id, py(qty) AS v", [python_function({"name": "py", **entry}, "")])


def test_options_reach_open_as_flink_cdcs_context_configuration(tmp_path, monkeypatch):
    """transform.md's "UDF Options": open(context) reads context.configuration()."""
    (tmp_path / "configured.py").write_text(
        textwrap.dedent(
            """
            class Prefix:
                def open(self, context) -> None:
                    self.prefix = context.configuration().get("prefix", "?")
                    self.width = int(context.configuration().get("width", "0"))

                def eval(self, value: str) -> str:
                    return self.prefix + value.rjust(self.width)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = {"name": "prefix", "classpath": "configured.Prefix", "options": {"prefix": "#", "width": "3"}}
    transform = compiled("id, prefix(note) AS p", [python_function(entry, str(tmp_path))])
    assert transform.project((1, 1, "a"), transform.row_meta()) == (1, "#  a")


def test_close_is_called_once_for_each_opened_function_when_the_process_stops(tmp_path, monkeypatch):
    (tmp_path / "lifecycle.py").write_text(
        textwrap.dedent(
            """
            EVENTS = []

            class Tracked:
                def open(self) -> None:
                    EVENTS.append("open")

                def eval(self, value: int) -> int:
                    return value

                def close(self) -> None:
                    EVENTS.append("close")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    tracked = UserFunction("tracked", "lifecycle.Tracked", str(tmp_path))
    compiled("id, tracked(qty) AS a", [tracked])
    compiled("id, tracked(qty) + 1 AS b", [tracked])  # a second table's rule: the same instance
    import lifecycle

    assert lifecycle.EVENTS == ["open"]
    close_user_functions()
    close_user_functions()  # nothing left to close
    assert lifecycle.EVENTS == ["open", "close"]
