"""`catalake catalog validate|show` and `catalake schema show`: the message definitions of catalogs
given on the command line, their problems, and the Spark schema derived for one of them.
`catalake state`: the bundled code location's state, written from the configured catalog."""

from __future__ import annotations

import sys
from pathlib import Path

from catalake.display import catalog_rows, text_table
from catalake.platform.catalog import CatalogError, load_catalog, read_catalog

from .context import Context


def catalog_validate(args, context: Context) -> int:
    from catalake.platform.warehouse.message_tables import message_tables, schema_problems

    catalog, problems = read_catalog(args.paths)
    if not any(p.severity == "error" for p in problems):
        # data schemas: a forbidden reference is an error, one that does not derive a warning
        try:
            tables, _ = message_tables(catalog, _roots(args.paths))
            problems += schema_problems(tables)
        except CatalogError as exc:
            problems += exc.problems
    for problem in problems:
        print(problem)
    errors = [p for p in problems if p.severity == "error"]
    print(
        f"{len(catalog.files)} file(s), {len(catalog)} message definition(s): "
        f"{len(errors)} error(s), {len(problems) - len(errors)} warning(s)",
        file=sys.stderr,
    )
    return 1 if errors else 0


def catalog_show(args, context: Context) -> int:
    catalog, problems = read_catalog(args.paths)
    errors = [p for p in problems if p.severity == "error"]
    if errors:  # no table of what could be read: the catalog is not usable as it is
        for problem in errors:
            print(problem, file=sys.stderr)
        print(f"catalake: the catalog is invalid ({len(errors)} error(s)); `catalake catalog validate` lists "
              "warnings too", file=sys.stderr)
        return 2
    headers, rows = catalog_rows(catalog)
    print(text_table(headers, rows))
    print(f"\n{len({m.group_id for m in catalog})} group(s), {len(catalog)} message definition(s)")
    return 0


def _roots(paths) -> list[Path]:
    """Where a catalog given on the command line may read schema files: its own folders."""
    return [p if p.is_dir() else p.parent for p in map(Path, paths)]


def schema_show(args, context: Context) -> int:
    from pyspark.sql.types import StructField, StructType

    from catalake.platform.schemas.derive import spark_type
    from catalake.platform.schemas.references import resolve_data_schema

    paths = args.catalog or [str(p) for p in context.settings.catalog]
    catalog = load_catalog(paths)
    matches = [m for m in catalog if args.message in (m.message_id, m.xid)]
    if len(matches) != 1:
        print(f"{len(matches)} message definitions match {args.message!r}", file=sys.stderr)
        return 1
    (message,) = matches
    # a schema that cannot be resolved or mapped is a SchemaError: `catalake: <why>`, exit 2 (catalake.cli.main)
    schema = resolve_data_schema(message, catalog.schemagroups, _roots(paths))
    if schema is None:
        print(f"{message.xid} declares no data schema")
        return 0
    dtype, nullable = spark_type(schema)
    root = dtype if isinstance(dtype, StructType) else StructType([StructField("data", dtype, nullable)])
    print(f"{message.xid}  ({schema.format}, {schema.reference or 'inline'})")
    print(root.treeString().rstrip())
    return 0


def state_refresh(args, context: Context) -> int:
    """Write the state every load of the bundled code location (`catalake.definitions`) reads, as
    `dg utils refresh-defs-state` does for a dg project: when deploying, before the code server
    starts. With the analytics, the dbt project is prepared and parsed. A catalog that is invalid
    keeps the last valid specs in the state, each saying what is wrong; exit 1."""
    from catalake.defs.catalog.state import refresh, state_file
    from catalake.defs.names import DEFAULT

    path = state_file(context.configured, DEFAULT)
    state = refresh(path, context.configured, DEFAULT, analytics=not args.no_analytics)
    print(f"the code location's state: {path}")
    print(f"  {len(state.specs)} message definition(s), catalog fingerprint {(state.catalog_fingerprint or 'none')[:12]}, "
          f"dbt models: {'yes' if state.manifest else 'no'}, first day: {state.first_day or 'the start_date setting, or none yet'}")
    if state.error is not None:
        print(f"{state.error} (the state keeps the last valid definitions)", file=sys.stderr)
        return 1
    return 0
