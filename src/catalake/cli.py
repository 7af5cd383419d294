"""`catalake` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from catalake.platform.catalog import load_catalog, read_catalog
from catalake.platform.config import Settings
from catalake.platform.report import catalog_rows, text_table


def _catalog_validate(args) -> int:
    catalog, problems = read_catalog(args.paths)
    for problem in problems:
        print(problem)
    errors = [p for p in problems if p.severity == "error"]
    print(
        f"{len(catalog.files)} file(s), {len(catalog)} message definition(s): "
        f"{len(errors)} error(s), {len(problems) - len(errors)} warning(s)",
        file=sys.stderr,
    )
    return 1 if errors else 0


def _catalog_show(args) -> int:
    catalog, problems = read_catalog(args.paths)
    errors = [p for p in problems if p.severity == "error"]
    for problem in errors:
        print(problem, file=sys.stderr)
    headers, rows = catalog_rows(catalog)
    print(text_table(headers, rows))
    print(f"\n{len({m.group_id for m in catalog})} group(s), {len(catalog)} message definition(s)")
    return 1 if errors else 0


def _schema_show(args) -> int:
    from pyspark.sql.types import StructField, StructType

    from catalake.platform.schemas.derive import spark_type
    from catalake.platform.schemas.json_schema import SchemaError
    from catalake.platform.schemas.references import resolve_data_schema

    paths = args.catalog or [str(p) for p in Settings.from_env().catalog]
    catalog = load_catalog(paths)
    matches = [m for m in catalog if args.message in (m.message_id, m.xid)]
    if len(matches) != 1:
        print(f"{len(matches)} message definitions match {args.message!r}", file=sys.stderr)
        return 1
    (message,) = matches
    roots = [p if p.is_dir() else p.parent for p in map(Path, paths)]
    try:
        schema = resolve_data_schema(message, catalog.schemagroups, roots)
        if schema is None:
            print(f"{message.xid} declares no data schema")
            return 0
        dtype, nullable = spark_type(schema)
    except SchemaError as exc:
        print(exc, file=sys.stderr)
        return 1
    root = dtype if isinstance(dtype, StructType) else StructType([StructField("data", dtype, nullable)])
    print(f"{message.xid}  ({schema.format}, {schema.reference or 'inline'})")
    print(root.treeString().rstrip())
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="catalake", description="Catalog-driven event lakehouse.")
    sub = p.add_subparsers(dest="command", required=True)
    cat = sub.add_parser("catalog", help="read and check xRegistry message catalogs").add_subparsers(
        dest="action", required=True
    )
    v = cat.add_parser("validate", help="check catalogs; one line per problem, exit 1 on errors")
    v.add_argument("paths", nargs="+", help="catalog files or directories")
    v.set_defaults(func=_catalog_validate)
    s = cat.add_parser("show", help="list the groups and message definitions of catalogs")
    s.add_argument("paths", nargs="+", help="catalog files or directories")
    s.set_defaults(func=_catalog_show)
    schema = sub.add_parser("schema", help="data schemas of message definitions").add_subparsers(dest="action", required=True)
    ss = schema.add_parser("show", help="print the Spark schema derived for a message definition, as a tree")
    ss.add_argument("message", help="message id (or xid /messagegroups/g/messages/m)")
    ss.add_argument("--catalog", nargs="+", help="catalog files or directories (default: CATALAKE_CATALOG)")
    ss.set_defaults(func=_schema_show)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
