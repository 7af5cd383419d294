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


def ansi_ident(name: str) -> str:
    """A name in standard SQL (DuckDB): double-quoted, quotes doubled."""
    return '"' + name.replace('"', '""') + '"'
