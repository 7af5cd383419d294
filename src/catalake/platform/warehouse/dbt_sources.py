"""The dbt project of a configured catalog: the repository's `dbt_project/` (the generic models,
macros and settings) copied under the warehouse (`<warehouse>/dbt`), with the files that depend
on the catalog generated into the copy, so that the analytics run for any catalog, and dbt's
`target/` and logs stay out of the source tree:
* `models/sources.yml`: dbt sources read by catalake's dbt-duckdb plugin (dbt_delta.py) from
  `$CATALAKE_WAREHOUSE/<table>`, views in dbt's in-memory `delta_sources` database;
  `meta.dagster.asset_key` ties each source to its Dagster asset, so every model is downstream
  of the per-message assets;
* `macros/catalake_messages.sql`: the list of message tables, for models that cover all of them
  (a macro is known when dbt parses, so `source()` calls in a loop over it record dependencies,
  which a loop over `graph.sources` would not); names and ids as SQL literals.
A model under `models/marts/` (e.g. the bike-share demo's `ride_lifecycle`) is copied only when
the catalog has every message source it reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

from pyspark.sql.types import StructType

from ..sql import ansi_string
from .catalog_table import CATALOG_TABLE, SCHEMA as CATALOG_SCHEMA
from .deadletters import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from .message_tables import MessageTable

SOURCES_FILE = Path("models") / "sources.yml"
# every source a view in the database profiles.yml attaches in memory, read by catalake's plugin;
# in its `main` schema (dbt-duckdb creates a source's schema in the models' database, not the
# source's), where tables of the two sources cannot collide: a message table's name has a `__`
SOURCE_DATABASE = {"database": "delta_sources", "schema": "main", "meta": {"plugin": "catalake_delta"}}
MACRO_FILE = Path("macros") / "catalake_messages.sql"
HEADER = "# Generated from the message catalog by catalake (platform/warehouse/dbt_sources.py); do not edit.\n"


def _path(table: str) -> str:
    return "{{ env_var('CATALAKE_WAREHOUSE', 'warehouse') }}/" + table


def _columns(schema: StructType) -> list[dict]:
    return [{"name": f.name, "description": f.metadata.get("comment", "")} for f in schema.fields]


def _table(name: str, path: str, description: str, schema: StructType, asset_key: list[str], **meta) -> dict:
    return {
        "name": name,
        "description": description,
        "meta": {"delta_table_path": _path(path), **meta, "dagster": {"asset_key": asset_key}},
        "columns": _columns(schema),
    }


def sources_yaml(tables: Sequence[MessageTable]) -> str:
    messages = [
        _table(t.message.table_name, t.name, t.description, t.schema,
               t.message.asset_path, xid=t.message.xid)
        for t in sorted(tables, key=lambda t: t.message.table_name)
    ]
    document = {
        "version": 2,
        "sources": [
            {"name": "messages", "description": "Per-message Delta tables, one per message definition of the catalog.",
             **SOURCE_DATABASE, "tables": messages},
            {"name": "catalake", "description": "The catalog table and the dead-letter table.", **SOURCE_DATABASE,
             "tables": [
                 _table("deadletter", DEADLETTER_TABLE, "Landed records no message table takes, with a reason.",
                        DEADLETTER_SCHEMA, ["deadletter"]),
                 _table("catalog_messages", CATALOG_TABLE, "The message catalog: one row per definition.",
                        CATALOG_SCHEMA, ["message_catalog"]),
             ]},
        ],
    }
    # written as JSON, which YAML reads as it is: PyYAML's representer takes seconds for a
    # thousand tables, in every process that loads the code location
    return HEADER + json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def messages_macro(tables: Sequence[MessageTable]) -> str:
    entries = [{"table": t.message.table_name, "xid": t.message.xid,
                "table_sql": ansi_string(t.message.table_name), "xid_sql": ansi_string(t.message.xid)}
               for t in sorted(tables, key=lambda t: t.message.table_name)]
    return ("{# " + HEADER.strip("# \n") + " #}\n"
            "{% macro catalake_messages() %}{{ return(" + json.dumps(entries, indent=2) + ") }}{% endmacro %}\n")


def generated_files(tables: Sequence[MessageTable]) -> dict[Path, str]:
    return {SOURCES_FILE: sources_yaml(tables), MACRO_FILE: messages_macro(tables)}


SOURCE_REF = re.compile(r"source\(\s*['\"]messages['\"]\s*,\s*['\"]([^'\"]+)['\"]\s*\)")
TEMPLATE_FILES = ("dbt_project.yml", "profiles.yml", "models", "macros")


def project_files(template: Path, tables: Sequence[MessageTable]) -> dict[Path, str]:
    """Every file of the catalog's dbt project (relative path -> text): the template's, without
    the marts whose message sources the catalog lacks, and the generated ones."""
    names = {t.message.table_name for t in tables}
    files: dict[Path, str] = {}
    for entry in TEMPLATE_FILES:
        root = template / entry
        for path in sorted([root] if root.is_file() else (p for p in root.rglob("*") if p.is_file())):
            relative = path.relative_to(template)
            text = path.read_text()
            if relative.parts[:2] == ("models", "marts") and not set(SOURCE_REF.findall(text)) <= names:
                continue  # a mart of another catalog (the demo's ride_lifecycle)
            files[relative] = text
    files.update(generated_files(tables))
    return files


def project_current(template: Path, dest: Path, tables: Sequence[MessageTable]) -> bool:
    """Whether the project at `dest` is the one `prepare_project` would write now (a release that
    changed the template, or a changed catalog, makes it stale)."""
    return all((dest / relative).is_file() and (dest / relative).read_text() == text
               for relative, text in project_files(template, tables).items())


def prepare_project(template: Path, dest: Path, tables: Sequence[MessageTable]) -> Path:
    """The catalog's dbt project at `dest`: files written only when they changed (dbt's parse
    is redone only then), files no longer part of it removed; `target/` and logs are left."""
    files = project_files(template, tables)
    for relative, text in files.items():
        path = dest / relative
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for entry in ("models", "macros"):
        for path in (dest / entry).rglob("*") if (dest / entry).is_dir() else ():
            if path.is_file() and path.relative_to(dest) not in files:
                path.unlink()
    return dest
