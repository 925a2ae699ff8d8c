"""Masking functions no Flink CDC release has, as Debezium's column.mask.hash and
column.mask.with do: HMAC_SHA256, a salted hash whose key comes from the environment (from a
Kubernetes Secret on a cluster), never from the definition; and MASK."""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Any

from sqlglot import exp

from sluice.errors import DefinitionError
from sluice.transform.casts import to_string
from sluice.transform.functions.signature import ANY, INT, STRING, Evaluate, Signature, same_type
from sluice.transform.operators import strict
from sluice.transform.sql_types import TEXT, SqlType, varchar


def _hmac_sha256(node: exp.Expression, args: list[Evaluate], kinds: list[SqlType]) -> Evaluate:
    """The value's text (a binary string's bytes) hashed with the key the named environment
    variable holds, as 64 hexadecimal digits: equal values hash alike, and without the key
    nobody can tell which value a hash is of. The key is read once, when the rule compiles."""
    name = node.expressions[1] if len(node.expressions) > 1 else None
    if not isinstance(name, exp.Literal) or not name.is_string:
        raise DefinitionError(
            f"{node.sql()}: HMAC_SHA256's second argument names the environment variable that holds its key, "
            "as a string literal ('MASK_KEY'); the key itself never goes into the definition"
        )
    key = os.environ.get(name.this)
    if not key:
        raise DefinitionError(
            f"{node.sql()}: environment variable {name.this} is not set: give HMAC_SHA256's key in it (on Kubernetes "
            "from a Secret, spec.secretEnv)"
        )
    secret = key.encode()

    def digest(value: Any) -> str:
        raw = value if isinstance(value, bytes) else (value if isinstance(value, str) else to_string(value)).encode()
        return hmac.new(secret, raw, hashlib.sha256).hexdigest()

    return strict(digest, args[:1])


def _mask(value: str, length: int | None = None) -> str:
    return "*" * (len(value) if length is None else max(length, 0))


# By name: sqlglot reads them as calls of functions it does not know (exp.Anonymous).
NAMED_SIGNATURES: dict[str, Signature] = {
    "HMAC_SHA256": Signature(
        "HMAC_SHA256", ("expressions",), ((*ANY, "binary"), STRING), lambda k: varchar(64), builder=_hmac_sha256
    ),
    "MASK": Signature("MASK", ("expressions",), (STRING, INT), lambda k: same_type(k) if len(k) == 1 else TEXT, _mask),
}
