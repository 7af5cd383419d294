"""Looking up schemas in the catalog's own schema registry (schemagroups), never elsewhere."""

from __future__ import annotations

from urllib.parse import urlparse

from ..problems import split_pointer


def split_reference(ref: str) -> tuple[str, str | None, str | None]:
    """(location, type name, inner JSON pointer) of a reference: a second '#' or a ':' suffix
    addresses inside the schema the location names."""
    location, inner = ref, None
    head, sep, tail = ref[1:].partition("#") if ref.startswith("#") else ref.partition("#")
    if sep:
        location, inner = ("#" + head if ref.startswith("#") else head), "/" + tail.lstrip("/") if tail else None
    type_name = None
    scheme = urlparse(location).scheme
    colon_at = location.rfind(":")
    if colon_at > len(scheme):  # ':TypeName' (Avro/Protobuf type) or ':definitions/X' (a part)
        location, suffix = location[:colon_at], location[colon_at + 1 :]
        if "/" in suffix:  # ':definitions/X'
            inner = "/" + suffix
        else:
            type_name = suffix
    return location, type_name, inner


def registry_reference(ref: str) -> tuple[str, str, str | None] | None:
    """'#/schemagroups/g/schemas/s[/versions/v][:Type|#/pointer]' or its xid form -> (g, s, v).

    None for anything that does not point into a schema registry (external URLs, malformed).
    """
    if not isinstance(ref, str) or "://" in ref:
        return None
    location, _, _ = split_reference(ref.strip())
    tokens = split_pointer(location.lstrip("#"))
    if len(tokens) >= 4 and tokens[0] in ("schemagroups", "schemaGroups") and tokens[2] == "schemas":
        version = tokens[5] if len(tokens) >= 6 and tokens[4] == "versions" else None
        if len(tokens) in (4, 6):
            return tokens[1], tokens[3], version
    return None


def find_schema(registry: dict, ref: str) -> tuple[dict, dict | None] | None:
    """The schema object and the addressed (or default/highest) version, or None."""
    parts = registry_reference(ref)
    if parts is None:
        return None
    gid, sid, vid = parts
    schema = ((registry.get(gid) or {}).get("schemas") or {}).get(sid)
    if not isinstance(schema, dict):
        return None
    versions = schema.get("versions") or {}
    if vid is None:
        vid = schema.get("defaultversionid") or (max(versions, key=_version_order) if versions else None)
    version = versions.get(vid) if vid is not None else None
    if vid is not None and parts[2] is not None and version is None:
        return None
    return schema, version


def _version_order(v: str):
    return tuple((0, int(x)) if x.isdigit() else (1, x) for x in str(v).replace("-", ".").split("."))


def schema_format(registry: dict, ref: str) -> str | None:
    found = find_schema(registry, ref)
    if found is None:
        return None
    schema, version = found
    return (version or {}).get("format") or schema.get("format")


# Where a schema version keeps its schema: 'schema' (0.5 and later), 'schemaobject' (2023 shape).
SCHEMA_CONTENT_KEYS = ("schema", "schemaobject", "schemaObject")


def version_content(version: dict | None):
    """The schema a registry version holds, or None."""
    for key in SCHEMA_CONTENT_KEYS:
        if isinstance(version, dict) and key in version:
            return version[key]
    return None
