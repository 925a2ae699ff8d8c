"""HMAC_SHA256 and MASK: a salted hash whose key comes from the environment (a Kubernetes
Secret on a cluster) and never from the definition, and a masked column. Their values are
in the conformance suite; here, what is refused."""

from __future__ import annotations

import pytest
import yaml

from sluice.errors import DefinitionError
from sluice.source.schema import Column, TableSchema
from sluice.transform.table_transform import TableTransform
from sluice.transform.transform_rule import parse_transforms, rule_for
from sluice.transform.udf_entries import user_function_entries

USERS = TableSchema(
    "app",
    "users",
    (Column("id", "int", "int(11)", False), Column("email", "varchar", "varchar(64)", True)),
    ("id",),
    "id",
)


def compiled(projection: str):
    rules = parse_transforms(yaml.safe_load(yaml.safe_dump([{"source-table": "app.users", "projection": projection}])))
    return TableTransform(rule_for(rules, "app", "users"), USERS)


def test_the_key_of_a_hash_is_read_from_the_environment_and_named_only_by_its_variable(monkeypatch):
    monkeypatch.setenv("EMAIL_KEY", "do-not-print-me")
    transform = compiled("id, HMAC_SHA256(email, 'EMAIL_KEY') AS email_hash")
    hashed = transform.project((1, "a@example.com"), transform.row_meta())[1]
    assert (
        len(hashed) == 64
        and hashed
        != compiled("id, HMAC_SHA256(email, 'EMAIL_KEY') AS h").project((1, "b@example.com"), transform.row_meta())[1]
    )
    assert "do-not-print-me" not in repr(transform.rule) and "do-not-print-me" not in str(transform.target())


@pytest.mark.parametrize(
    ("projection", "message"),
    [
        ("id, HMAC_SHA256(email, 'NO_SUCH_KEY') AS h", r"environment variable NO_SUCH_KEY is not set"),
        ("id, HMAC_SHA256(email, email) AS h", r"second argument names the environment variable"),
        ("id, HMAC_SHA256(email) AS h", r"second argument names the environment variable"),
        ("id, MASK(email, 2, 3) AS m", r"MASK takes 1 to 2 arguments"),
        ("id, MASK(id) AS m", r"MASK's argument 1 must be STRING, not INTEGER"),
    ],
)
def test_what_a_masking_function_cannot_take_is_refused(projection, message):
    with pytest.raises(DefinitionError, match=message):
        compiled(projection)


def test_no_user_defined_function_may_take_a_built_in_functions_name():
    for name in ("mask", "HMAC_SHA256", "upper", "now"):
        refused = user_function_entries(({"name": name, "classpath": "m.F"},))
        assert refused == f"'{name}' must be an identifier no built-in function has", name
    assert user_function_entries(({"name": "format", "classpath": "m.F"},)) is None  # sqlglot's, not Sluice's
