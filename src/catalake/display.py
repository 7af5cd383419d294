"""Small tables for people: markdown for the Dagster UI, aligned text for the terminal."""

from __future__ import annotations


def _cell(value) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(headers: list[str], rows: list[list]) -> str:
    cells = [headers] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*r) for r in cells[1:]]
    return "\n".join(line.rstrip() for line in out)


def catalog_rows(catalog) -> tuple[list[str], list[list]]:
    headers = ["group", "message", "envelope", "protocol", "base", "schema", "placeholders", "table", "alias of"]
    rows = [
        [
            m.group_id,
            m.message_id,
            m.envelope or "",
            m.protocol or "",
            m.base_chain[0].rsplit("/", 1)[-1] if m.base_chain else "",
            m.get("dataschemaformat") or "",
            ",".join(m.placeholders),
            m.table_name,
            m.alias_of.xid if m.alias_of is not None else "",
        ]
        for m in catalog.listed
    ]
    return headers, rows
