"""The built-in functions of transform expressions, as Flink CDC names them, by family (as
flink-cdc-runtime's functions/impl): each a signature and its Python implementation over
decoded values. NULL in gives NULL out except where SQL says otherwise (CONCAT_WS)."""

from __future__ import annotations

from sluice.transform.functions import masking, numbers, strings, temporal
from sluice.transform.functions.signature import Signature

SIGNATURES: dict[type, Signature] = {**strings.SIGNATURES, **numbers.SIGNATURES, **temporal.SIGNATURES}
# The functions sqlglot does not know, by their upper-case names.
NAMED_SIGNATURES: dict[str, Signature] = {
    **masking.NAMED_SIGNATURES,
    **strings.NAMED_SIGNATURES,
    **temporal.NAMED_SIGNATURES,
}
