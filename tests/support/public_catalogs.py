"""The public catalogs of ../shared/data as its INDEX.md lists them: the valid ones with their
group and message counts, and the files that break a rule."""

from __future__ import annotations

import re

from support.paths import SHARED_DATA

# Files that break a spec rule or are not JSON at all; each must give its clear error.
BROKEN = {
    # declares the CloudEvents 'source' attribute required: false (spec: type/id/source never are)
    "xregistry-cli@b7e0b0a/samples/message-definitions/Microsoft.Storage.cereg": "cloudevents-required-attribute",
    # 'schemaformatr' typo and a malformed reference ('#/schemagroupsContoso...'): no schema format
    "xregistry-codegen/samples/protocols/nats-consumer-endpoint.xreg.json": "dataschemaformat-required",
    "xregistry-cli@b7e0b0a/samples/protocols/nats-consumer-endpoint.cereg": "json-syntax",
    "xregistry-cli@b7e0b0a/samples/protocols/nats-producer-endpoint.cereg": "json-syntax",
}


def index_rows():
    index = SHARED_DATA / "INDEX.md"
    if not index.exists():
        return []
    rows = []
    for line in index.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and re.fullmatch(r"\d+/\d+", cells[1]):
            groups, messages = map(int, cells[1].split("/"))
            rows.append((cells[0].strip("`"), groups, messages))
    return rows


VALID = [r for r in index_rows() if r[0] not in BROKEN]
