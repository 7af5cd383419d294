"""SQL text: quoting of names and values inside generated expressions (Spark SQL, and standard
SQL for the dbt models)."""

from __future__ import annotations


def ident(name: str) -> str:
    """A column or field name, backquoted."""
    return "`" + name.replace("`", "``") + "`"


def string(text: str) -> str:
    """A string literal (Spark's default parser reads backslash escapes inside quotes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ansi_string(text: str) -> str:
    """A string literal of standard SQL (DuckDB, which runs the dbt models): quotes doubled,
    backslashes as they are."""
    return "'" + text.replace("'", "''") + "'"


def literal(value) -> str:
    """A JSON scalar from a schema (str, int, float) as a SQL literal of the same Spark type
    `functions.lit` would give it."""
    if isinstance(value, str):
        return string(value)
    if isinstance(value, float):
        return f"{value!r}D"
    return str(int(value))
