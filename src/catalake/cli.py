"""`catalake` command line."""

from __future__ import annotations

import argparse
import sys

from catalake.platform.catalog import read_catalog
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
