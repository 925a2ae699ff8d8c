"""What each built-in function does, in a line, by its signature's name: the function
reference of the docs is made from these, the signature table and the conformance cases
(a function without a summary fails a test). `null` is said only where the function builds
its own evaluation; a strict function is NULL when an argument is NULL."""

from __future__ import annotations

from typing import NamedTuple


class Summary(NamedTuple):
    calls: str  # how it is written
    does: str
    null: str = ""  # its NULL rule, where it is not strict


SUMMARIES: dict[str, Summary] = {
    "||": Summary("a || b", "the text of both, concatenated", "NULL if either is NULL"),
    "CONCAT": Summary("CONCAT(a, b, ...)", "the text of every argument, concatenated", "NULL if any is NULL"),
    "CONCAT_WS": Summary(
        "CONCAT_WS(separator, a, b, ...)",
        "the arguments' text joined by the separator",
        "NULL arguments are skipped; NULL if the separator is NULL",
    ),
    "UPPER": Summary("UPPER(s)", "s in upper case"),
    "LOWER": Summary("LOWER(s)", "s in lower case"),
    "TRIM": Summary(
        "TRIM([BOTH|LEADING|TRAILING [chars] FROM] s), LTRIM(s[, chars]), RTRIM(s[, chars])",
        "s without the given characters (default: Java's whitespace for TRIM, spaces for LTRIM/RTRIM) at its ends",
        "NULL if s or chars is NULL",
    ),
    "CHAR_LENGTH": Summary("CHAR_LENGTH(s)", "the number of characters in s"),
    "SUBSTRING": Summary("SUBSTR(s, start[, length]), SUBSTRING(s FROM start [FOR length])", "part of s, from 1"),
    "REPLACE": Summary("REPLACE(s, from, to)", "s with every `from` replaced by `to`"),
    "LEFT": Summary("LEFT(s, n)", "the first n characters of s"),
    "RIGHT": Summary("RIGHT(s, n)", "the last n characters of s"),
    "LPAD/RPAD": Summary(
        "LPAD(s, n, pad), RPAD(s, n, pad)",
        "s padded on the left (right) with pad to n characters, or cut to n",
        "NULL if any argument is NULL, or pad is empty and s shorter than n",
    ),
    "REPEAT": Summary("REPEAT(s, n)", "s repeated n times (empty for n <= 0)"),
    "REGEXP_REPLACE": Summary(
        "REGEXP_REPLACE(s, regex, replacement)", "s with each match of the Java-style regex replaced ($1: a group)"
    ),
    "LOCATE": Summary(
        "LOCATE(sub, s[, start]), POSITION(sub IN s [FROM start]), INSTR(s, sub)",
        "where sub first occurs in s at or after start (from 1), 0 where it does not",
    ),
    "BTRIM": Summary("BTRIM(s[, chars])", "s without the given characters (default: spaces) at both ends"),
    "OVERLAY": Summary(
        "OVERLAY(s PLACING r FROM n [FOR m])",
        "s with m characters from position n (default: as many as r has) replaced by r; s itself where n is outside it",
    ),
    "STARTSWITH": Summary("STARTSWITH(s, prefix)", "whether s begins with prefix"),
    "ENDSWITH": Summary("ENDSWITH(s, suffix)", "whether s ends with suffix"),
    "TO_BASE64": Summary("TO_BASE64(s)", "the Base64 text of s (of its UTF-8 bytes) or of a binary value"),
    "UUID": Summary("UUID()", "a new random UUID as text, each time it is evaluated", "never NULL"),
    "ABS": Summary("ABS(x)", "the absolute value, of x's own type (as Java's: ABS of the least SMALLINT is itself)"),
    "CEIL": Summary("CEIL(x), CEILING(x)", "the least integer not below x"),
    "FLOOR": Summary("FLOOR(x)", "the greatest integer not above x"),
    "ROUND": Summary("ROUND(x[, d])", "x rounded half up to d decimal places (default 0)"),
    "EXTRACT": Summary(
        "EXTRACT(unit FROM t)",
        "a field of a date or timestamp: YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, ...",
        "NULL if t is",
    ),
    "DATE_FORMAT": Summary("DATE_FORMAT(t, pattern)", "t as text in a Java date pattern (yyyy-MM-dd HH:mm:ss)"),
    "TO_DATE": Summary(
        "TO_DATE(s[, pattern])", "a date read from text (yyyy-MM-dd unless a pattern says)", "NULL if s is"
    ),
    "TIMESTAMPDIFF": Summary(
        "TIMESTAMPDIFF(unit, t1, t2)",
        "whole units from t1 to t2 (SECOND, MINUTE, HOUR, DAY, MONTH, YEAR; months and years counted whole)",
        "NULL if t1 or t2 is",
    ),
    "TIMESTAMPADD": Summary("TIMESTAMPADD(unit, n, t)", "t moved by n units", "NULL if n or t is"),
    "DATE_ADD": Summary("DATE_ADD(d, n)", "the date n days after d, as yyyy-MM-dd text (as Flink CDC gives it)"),
    "UNIX_TIMESTAMP": Summary(
        "UNIX_TIMESTAMP([s[, pattern]])",
        "s (default pattern yyyy-MM-dd HH:mm:ss) read on pipeline.local-time-zone's clock, as seconds since the "
        "epoch; -9223372036854775808 where the pattern cannot read s; without s, the time the row is transformed",
    ),
    "TO_TIMESTAMP_LTZ": Summary(
        "TO_TIMESTAMP_LTZ(n[, 0|3]), TO_TIMESTAMP_LTZ(s[, pattern[, zone]])",
        "the instant n seconds (0) or milliseconds (3, the default) after the epoch, or s read in the zone "
        "(default UTC, as Flink CDC's code reads it; pattern yyyy-MM-dd HH:mm:ss.SSS)",
    ),
    "FROM_UNIXTIME": Summary(
        "FROM_UNIXTIME(seconds[, pattern])",
        "the time `seconds` after the epoch as text, on pipeline.local-time-zone's clock",
        "NULL if seconds is",
    ),
    "TO_TIMESTAMP": Summary(
        "TO_TIMESTAMP(s[, pattern])",
        "a timestamp read from text (yyyy-MM-dd HH:mm:ss unless a pattern says)",
        "NULL if s is",
    ),
    "TIMESTAMP": Summary("TIMESTAMP(s)", "a timestamp read from text, or a date or time as one"),
    "YEAR": Summary("YEAR(t)", "the year of a date or timestamp"),
    "QUARTER": Summary("QUARTER(t)", "the quarter, 1 to 4"),
    "MONTH": Summary("MONTH(t)", "the month, 1 to 12"),
    "WEEK": Summary("WEEK(t)", "the ISO week of the year, 1 to 53"),
    "DAY": Summary("DAYOFMONTH(t), DAY(t)", "the day of the month, 1 to 31"),
    "DOY": Summary("DAYOFYEAR(t)", "the day of the year, 1 to 366"),
    "DOW": Summary("DAYOFWEEK(t)", "the day of the week, 1 (Sunday) to 7"),
    "HOUR": Summary("HOUR(t)", "the hour, 0 to 23 (of a time of day too)"),
    "MINUTE": Summary("MINUTE(t)", "the minute, 0 to 59"),
    "SECOND": Summary("SECOND(t)", "the second, 0 to 59"),
    "HMAC_SHA256": Summary(
        "HMAC_SHA256(value, 'ENV_NAME')",
        "the hex HMAC-SHA256 of the value's text (or bytes), keyed by the environment variable named "
        "(on Kubernetes: spec.secretEnv); the key never appears in the definition, the state or a message",
        "NULL if the value is",
    ),
    "MASK": Summary("MASK(s[, n])", "as many * as s has characters (or n)"),
}
