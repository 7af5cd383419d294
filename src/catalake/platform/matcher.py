"""Message definitions as filters (xRegistry message spec, "Message Definitions": a definition is a
filter condition): the catalog compiled into data, matched by one generic Spark expression.

Each definition becomes a row of checks (`compile_definition`), indexed by its exact
discriminator: the CloudEvents `type` it requires, else its protocol address (Kafka topic, MQTT
topic name, NATS subject, HTTP path, AMQP address). A record finds its candidates by two
broadcast hash joins on those keys (plus the few definitions that declare neither exactly, one
small array joined to every row), so it only tests the definitions its discriminators point to
and the cost per record does not grow with the number of definitions.

Rules (each a named function below, with the spec section it implements):
* rule_value_equals: a declared `value` must be equal, case-sensitive (spec "value").
* rule_uritemplate: a `uritemplate` value matches with placeholders as wildcards (spec "value",
  RFC 6570 level 1). A placeholder matches one or more characters, `/` and `:` included (real
  catalogs put whole URLs in one placeholder); the whole value is anchored; where a split is
  ambiguous the earlier placeholder takes the shortest match. Strict mode (`strict=True`)
  matches only what a level-1 expansion can produce (unreserved characters and %-escapes).
* rule_required: `required` attributes/options must be present (`id`, `source`, `type`,
  `specversion` always, spec "CloudEvents/1.0"). A structured JSON event without
  `datacontenttype` carries JSON (CloudEvents JSON format), so it counts as `application/json`.
  A `timestamp` declaration's `value` is a creation-time default (spec "value"), and a
  `dataschema` value pointing into the catalog's own registry is not sent by producers: neither
  is used as a filter.
* rule_attribute_type: declared types are checked (spec "Type System": integer, boolean,
  timestamp, uri, urireference, binary; string and uritemplate accept any text).
* rule_protocol: a definition with a protocol matches only records of that protocol (and
  version, when both name one); one with only an envelope applies to every binding of it.
* rule_same_placeholder_value: a placeholder used more than once (including what is inherited
  through `basemessage`) takes the same value everywhere (spec "value").
* rule_most_derived: among several candidates, one that derives from all the others through
  `basemessage` wins (spec "basemessage": the derived message shadows its base).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)
from uritemplate import URITemplate

from .catalog.model import MessageDefinition
from .catalog.normalize import ADDRESS_OPTIONS, protocol_family

CHECK = StructType([
    StructField("key", StringType(), False),  # 'ce:<attribute>' or 'opt:<option>[.<entry>]' (records.py)
    StructField("value", StringType(), True),  # exact value
    StructField("regex", StringType(), True),  # anchored pattern of a uritemplate value
    StructField("names", ArrayType(StringType(), False), False),  # its placeholders, in group order
    StructField("required", BooleanType(), False),
    StructField("type", StringType(), True),  # CloudEvents attribute type
])
DEFINITION = StructType([
    StructField("idx", IntegerType(), False),
    StructField("xid", StringType(), False),
    StructField("family", StringType(), True),
    StructField("version", StringType(), True),
    StructField("ce", BooleanType(), False),
    StructField("base_chain", ArrayType(StringType(), False), False),
    StructField("checks", ArrayType(CHECK, False), False),
])
INDEX = StructType([
    StructField("lookup", StringType(), False),  # 'type|<type>' or 'address|<family>|<address>'
    StructField("keyed", ArrayType(DEFINITION, False), False),
])

LOOSE = "(.+?)"
STRICT = "((?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+?)"
RECORD_FAMILY = {"kafka": "KAFKA", "mqtt": "MQTT", "amqp": "AMQP", "http": "HTTP", "nats": "NATS", "rocketmq": "ROCKETMQ"}


def template_regex(template: str, strict: bool = False) -> tuple[str, list[str]]:
    """Anchored Java/Python regex for a level-1 URI template, and its placeholder names in order."""
    # uritemplate parses the expressions; level 1 has one name per expression
    names = [v.variable_names[0] for v in URITemplate(template).variables]
    parts, pos = [], 0
    for match in re.finditer(r"\{([^{}]+)\}", template):
        parts.append(re.escape(template[pos:match.start()]))
        parts.append(STRICT if strict else LOOSE)
        pos = match.end()
    parts.append(re.escape(template[pos:]))
    return "^" + "".join(parts) + "$", names


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def registry_reference(value) -> bool:
    """A `dataschema` value pointing consumers at the catalog's own registry entry: producers do
    not send it, so it neither filters records nor is required of them."""
    return isinstance(value, str) and value.startswith(("#", "/schemagroups/"))


def _check(key: str, decl: dict, strict: bool) -> dict | None:
    value = _text(decl.get("value"))
    required = bool(decl.get("required"))
    kind = str(decl.get("type") or "string").lower()
    if kind == "timestamp":
        value = None  # a timestamp `value` is what producers fill in at creation (spec "value"), not a filter
    if key == "ce:dataschema" and registry_reference(value):
        return None
    if value is None and not required and kind in ("string", "uritemplate"):
        return None  # declares nothing a record could violate
    regex, names = None, []
    if value is not None and "{" in value:
        regex, names = template_regex(value, strict)
        value = None
    return {"key": key, "value": value, "regex": regex, "names": names, "required": required, "type": kind}


def _option_checks(options: dict, strict: bool) -> list[dict]:
    checks = []
    for name, opt in options.items():
        if isinstance(opt, list):  # list sections (HTTP/NATS headers, MQTT user properties)
            entries = [(e.get("name"), e) for e in opt if isinstance(e, dict) and e.get("name")]
        elif isinstance(opt, dict) and opt and "value" not in opt and all(isinstance(v, dict) for v in opt.values()):
            entries = list(opt.items())  # map sections (Kafka headers, AMQP sections, HTTP query)
        else:
            entries = None
        if entries is None:
            if isinstance(opt, dict):
                check = _check(f"opt:{name}", opt, strict)
                checks += [check] if check else []
            continue
        for entry, decl in entries:
            key = f"opt:{name}.{str(entry).lower()}" if name != "properties" else f"opt:properties.{str(entry).lower().replace('_', '-')}"
            check = _check(key, decl, strict)
            checks += [check] if check else []
    return checks


# CloudEvents 1.0 types `time` itself (RFC 3339): a record whose `time` does not parse matches no
# definition, rather than landing with its time silently null
CE_TYPED = {"time": {"type": "timestamp"}}


def compile_definition(idx: int, message: MessageDefinition, strict: bool = False) -> dict:
    """One definition as data: its protocol, envelope and every check a record must pass."""
    is_ce = (message.envelope or "").lower().startswith("cloudevents")
    checks = []
    if is_ce:
        declared = message.attributes
        for name in [*declared, *(n for n in CE_TYPED if n not in declared)]:
            decl = declared.get(name, {})
            if isinstance(decl, dict):
                decl = {**CE_TYPED.get(name, {}), **decl}
                check = _check(f"ce:{name}", decl, strict)
                checks += [check] if check else []
    family = protocol_family(message.protocol)
    family = None if family in (None, "NONE") else family
    checks += _option_checks(message.protocol_options, strict) if family else []
    version = message.protocol.partition("/")[2] if family and message.protocol else ""
    return {
        "idx": idx, "xid": message.xid, "family": family, "version": version or None, "ce": is_ce,
        "base_chain": list(message.base_chain), "checks": checks,
    }


@dataclass(frozen=True)
class CompiledCatalog:
    messages: list[MessageDefinition]
    index: list[tuple[str, list[dict]]]  # rows of INDEX
    unkeyed: list[dict]  # definitions without an exact discriminator: every record tests them

    def index_frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame(self.index, INDEX)

    def unkeyed_frame(self, spark: SparkSession) -> DataFrame:
        return spark.createDataFrame([(self.unkeyed,)], StructType([StructField("unkeyed", ArrayType(DEFINITION, False), False)]))


def compile_catalog(messages: list[MessageDefinition], strict: bool = False) -> CompiledCatalog:
    defs = [compile_definition(i, m, strict) for i, m in enumerate(messages)]
    index: dict[str, list[dict]] = {}
    unkeyed: list[dict] = []
    for d in defs:
        exact = {c["key"]: c["value"] for c in d["checks"] if c["value"] is not None}
        address = exact.get(f"opt:{ADDRESS_OPTIONS.get(d['family'] or '', '')}")
        if "ce:type" in exact:
            index.setdefault(f"type|{exact['ce:type']}", []).append(d)
        elif d["family"] and address is not None:
            index.setdefault(f"address|{d['family']}|{address}", []).append(d)
        else:
            unkeyed.append(d)
    return CompiledCatalog(messages, list(index.items()), unkeyed)


# -- the rules, as Spark SQL over a candidate `d`, one of its checks `c`, and the record's `fields`

def rule_value_equals() -> str:
    return "(c.value IS NULL OR fields[c.key] = c.value)"


def rule_uritemplate() -> str:
    return "(c.regex IS NULL OR regexp_extract(fields[c.key], c.regex, 0) = fields[c.key])"


def rule_required() -> str:
    return "(fields[c.key] IS NOT NULL OR NOT c.required)"


def rule_attribute_type() -> str:
    return (
        "(fields[c.key] IS NULL OR CASE c.type"
        " WHEN 'integer' THEN fields[c.key] RLIKE '^[+-]?[0-9]+$'"
        " WHEN 'boolean' THEN fields[c.key] IN ('true', 'false')"
        " WHEN 'timestamp' THEN try_to_timestamp(fields[c.key]) IS NOT NULL"
        " WHEN 'uri' THEN fields[c.key] RLIKE '^[A-Za-z][A-Za-z0-9+.-]*:[^ ]*$'"
        " WHEN 'urireference' THEN fields[c.key] RLIKE '^[^ ]*$'"
        " WHEN 'binary' THEN fields[c.key] RLIKE '^[A-Za-z0-9+/]*={0,2}$'"
        " ELSE true END)"
    )


def rule_protocol() -> str:
    return (
        "((d.family IS NULL AND (NOT d.ce OR is_ce))"
        " OR (d.family = rec_family AND (NOT d.ce OR is_ce)"
        "     AND (d.version IS NULL OR rec_version IS NULL OR upper(d.version) = upper(rec_version))))"
    )


def placeholder_pairs(d: str = "d") -> str:
    return (
        f"flatten(transform(filter({d}.checks, c -> c.regex IS NOT NULL AND size(c.names) > 0 AND fields[c.key] IS NOT NULL),"
        " c -> transform(sequence(1, size(c.names)), j -> named_struct('name', c.names[j - 1],"
        " 'value', regexp_extract(fields[c.key], c.regex, j)))))"
    )


def rule_same_placeholder_value() -> str:
    # forall over a one-element array binds the pairs once (SQL has no `let`)
    return (
        f"forall(array({placeholder_pairs()}),"
        " pairs -> size(array_distinct(pairs)) = size(array_distinct(transform(pairs, p -> p.name))))"
    )


def rule_most_derived() -> str:
    return "filter(cands, c -> forall(cands, o -> o.xid = c.xid OR array_contains(c.base_chain, o.xid)))"


def check_passes() -> str:
    return f"({rule_required()} AND {rule_value_equals()} AND {rule_uritemplate()} AND {rule_attribute_type()})"


def match(records: DataFrame, catalog: CompiledCatalog) -> DataFrame:
    """Adds `candidates` (xids), `winner` (idx, or null), `match_status` (matched, no_match,
    ambiguous, missing_required_attribute) and `placeholders` (map) to normalized records."""
    families = F.create_map(*[x for k, v in RECORD_FAMILY.items() for x in (F.lit(k), F.lit(v))])
    df = records.withColumn("rec_family", F.element_at(families, F.col("record_kind")))
    df = df.withColumn("rec_version", F.regexp_extract(F.coalesce("protocol", F.lit("")), "/(.*)$", 1))
    df = df.withColumn("rec_version", F.when(F.col("rec_version") != "", F.col("rec_version")))
    index = F.broadcast(catalog.index_frame(records.sparkSession))
    for name, key in (
        ("by_type", F.concat(F.lit("type|"), F.col("fields")["ce:type"])),
        ("by_address", F.concat(F.lit("address|"), F.col("rec_family"), F.lit("|"), F.col("address"))),
    ):
        df = df.withColumn("lookup", key).join(
            index.withColumnRenamed("keyed", name), on="lookup", how="left"
        ).drop("lookup")
    none = F.array().cast(ArrayType(DEFINITION, False))
    if catalog.unkeyed:  # few (definitions without an exact discriminator): one small array per row
        df = df.crossJoin(F.broadcast(catalog.unkeyed_frame(records.sparkSession)))
    else:
        df = df.withColumn("unkeyed", none)
    df = df.withColumn("cand_defs", F.concat(F.coalesce("by_type", none), F.coalesce("by_address", none), F.col("unkeyed")))
    df = df.withColumn("applicable", F.expr(f"filter(cand_defs, d -> {rule_protocol()})"))
    passes = f"d -> forall(d.checks, c -> {check_passes()}) AND {rule_same_placeholder_value()}"
    df = df.withColumn("cands", F.expr(f"filter(applicable, {passes})"))
    df = df.withColumn("derived", F.expr(rule_most_derived()))
    n = F.size("cands")
    winner = F.when(n == 1, F.col("cands")[0]).when(F.size("derived") == 1, F.col("derived")[0])
    df = df.withColumn("winner_def", winner)
    missing = F.expr(
        "flatten(transform(applicable, d -> transform(filter(d.checks, c -> c.required AND fields[c.key] IS NULL), c -> c.key)))"
    )
    status = (
        F.when(F.col("winner_def").isNotNull(), F.lit("matched"))
        .when(n > 1, F.lit("ambiguous"))
        .when(F.size(missing) > 0, F.lit("missing_required_attribute"))
        .otherwise(F.lit("no_match"))
    )
    df = df.withColumn("match_status", status).withColumn("missing", F.array_distinct(missing))
    df = df.withColumn("candidates", F.transform("cands", lambda c: c.xid))
    df = df.withColumn("winner", F.col("winner_def.idx"))
    pairs = F.expr(placeholder_pairs("winner_def"))
    df = df.withColumn("placeholders", F.when(F.col("winner_def").isNotNull(), F.map_from_entries(F.array_distinct(pairs))))
    return df.drop("by_type", "by_address", "unkeyed", "cand_defs", "applicable", "cands", "derived", "winner_def", "rec_version")
