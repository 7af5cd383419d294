"""Message definitions as filters (xRegistry message spec, "Message Definitions": a definition is a
filter condition): the catalog compiled once, each record matched by dictionary lookups.

Each definition becomes a list of checks (`compile_definition`), indexed by its exact
discriminator: the CloudEvents `type` it requires, else its protocol address (Kafka topic, MQTT
topic name, NATS subject, HTTP path, AMQP address). A record only tests the definitions its
discriminators point to, plus the few that declare neither exactly, so the cost per record does
not grow with the number of definitions.

Rules (each a named function below, with the spec section it implements):
* rule_value_equals: a declared `value` must be equal (spec "value"): text case-sensitively, a
  typed attribute by its value, a content type (`datacontenttype`, a binding's content-type
  option) as a media type (attributes.py, the rules the table's suite applies too).
* declared_content_type: the definition's own `datacontenttype` (declared, not inferred from its
  schema format) is the payload's media type (spec "datacontenttype"; rc2's example: it implies
  the CloudEvents attribute's value). A record that names no content type carries JSON, unless
  its payload is base64 (record.py `payload:contenttype`).
* rule_uritemplate: a `uritemplate` value matches with placeholders as wildcards (spec "value",
  RFC 6570 level 1). A placeholder matches one or more characters, `/` and `:` included (real
  catalogs put whole URLs in one placeholder); the whole value is anchored; where a split is
  ambiguous the earlier placeholder takes the shortest match. Strict mode (`strict=True`)
  matches only what a level-1 expansion can produce (unreserved characters and %-escapes).
* required (`CompiledCatalog.match`, `missing`): `required` attributes/options must be present (`id`, `source`, `type`,
  `specversion` always, spec "CloudEvents/1.0"). A structured JSON event without
  `datacontenttype` carries JSON (CloudEvents JSON format), so it counts as `application/json`.
  A `timestamp` declaration's `value` is a constant like any other (spec "value"), compared as
  an instant (attributes.timestamp_value_filters), but for `0000-01-01T00:00:00Z` (and the
  spellings the xRegistry tools use for it), which producers replace with the creation time;
  a `dataschema` value pointing into the catalog's own registry is not sent by producers:
  neither of those two is used as a filter. A timestamp `value` that is a template
  (`{view_date}T00:00:00Z`) is matched like any template, on the attribute's text as sent: its
  placeholders get their values. A binding's delivery settings (MQTT qos/retain/expiry, AMQP
  header) are never filters (protocols.py).
* rule_attribute_type: declared types are checked (spec "Type System": integer, boolean,
  timestamp (RFC 3339), uri, urireference, binary; string and uritemplate accept any text), by
  the parse that types the table's column (attributes.py).
* rule_protocol: a definition with a protocol matches only records of that protocol (and
  version, when both name one); one with only an envelope applies to every binding of it.
* rule_same_placeholder_value: a placeholder used more than once (including what is inherited
  through `basemessage`) takes the same value everywhere (spec "value").
* rule_most_derived: among several candidates, one that derives from all the others through
  `basemessage` wins (spec "basemessage": the derived message shadows its base), on the
  record's metadata alone: a payload its schema refuses is its `schema_violation`, never
  handed to the base whose schema would take it (the record is the derived message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Callable

from uritemplate import URITemplate

from ..records import attributes, cloudevents
from ..records.protocols import BY_FAMILY
from ..records.record import Record
from .model import MessageDefinition
from .normalize import ADDRESS_OPTIONS, protocol_family

LOOSE = "(.+?)"
STRICT = "((?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+?)"
# the record's payload content type (record.py), filtered by the definition's `datacontenttype`
CONTENT_TYPE = "payload:contenttype"


# RFC 6570 operators whose expansion names the variable or starts with a fixed character, and
# so is empty when the variable is undefined: prefix, the characters a value stops at, and
# whether the variable's name precedes its value (`?page=2`)
OPERATORS = {
    "#": ("#", "", False), "/": ("/", "/?#", False), ".": (r"\.", "./?#", False),
    ";": (";", ";/?#", True), "?": ("[?&]", "&#", True), "&": ("&", "&#", True),
}


def template_regex(template: str, strict: bool = False) -> tuple[str, list[str]]:
    """Anchored Java/Python regex for a URI template, and its placeholder names in order.

    Simple (`{x}`) and reserved (`{+x}`) expressions match one or more characters. Expressions
    with an operator (RFC 6570 levels 3-4: `{#x}`, `{/x}`, `{.x}`, `{;x}`, `{?x,y}`, `{&x}`) match
    their expansion, and nothing when the variable is undefined: `/items{?page}` matches `/items`
    and `/items?page=2` (page = "2")."""
    # uritemplate parses the expressions, operators included
    variables = URITemplate(template).variables
    names: list[str] = []
    parts, pos = [], 0
    for variable, match in zip(variables, re.finditer(r"\{([^{}]+)\}", template)):
        parts.append(re.escape(template[pos:match.start()]))
        operator = variable.operator.value
        if operator in OPERATORS:
            prefix, stops, named = OPERATORS[operator]
            value = f"([^{re.escape(stops)}]*?)" if stops else "(.*?)"
            for name in variable.variable_names:
                key = re.escape(name) + ("=" if operator in "?&" else "(?:=)?") if named else ""
                parts.append(f"(?:{prefix}{key}{value})?")
                names.append(name)
        else:
            parts.append(STRICT if strict else LOOSE)
            names.append(variable.variable_names[0])
        pos = match.end()
    parts.append(re.escape(template[pos:]))
    return "^" + "".join(parts) + "$", names


def is_registry_pointer(value) -> bool:
    """A `dataschema` value pointing consumers at the catalog's own registry entry: producers do
    not send it, so it neither filters records nor is required of them."""
    return isinstance(value, str) and value.startswith(("#", "/schemagroups/"))


@dataclass(frozen=True)
class Check:
    key: str  # 'ce:<attribute>', 'opt:<option>[.<entry>]' or CONTENT_TYPE (record.py)
    value: str | None  # exact value
    regex: re.Pattern | None  # anchored pattern of a uritemplate value
    names: tuple[str, ...]  # its placeholders, in group order
    required: bool
    type: str  # CloudEvents attribute type
    # whether a text equals `value` (attributes.value_rule); derived from the fields above
    equals: Callable[[str], bool] | None = field(default=None, compare=False)


def _check(key: str, decl: dict, strict: bool) -> Check | None:
    value = attributes.declared_text(decl.get("value"))
    required = bool(decl.get("required"))
    kind = str(decl.get("type") or "string").lower()
    if kind == "timestamp" and not attributes.timestamp_value_filters(value):
        value = None  # 0000-01-01T00:00:00Z: the creation time, filled in by producers (spec "value")
    if key == "ce:dataschema" and is_registry_pointer(value):
        return None
    if value is None and not required and kind in ("string", "uritemplate"):
        return None  # declares nothing a record could violate
    regex, names = None, []
    if value is not None and "{" in value:
        pattern, names = template_regex(value, strict)
        regex, value = re.compile(pattern), None
    name = key.rpartition(".")[2] if key.startswith("opt:") else key.partition(":")[2]
    equals = attributes.value_rule(name, kind, value) if value is not None else None
    return Check(key, value, regex, tuple(names), required, kind, equals)


def _option_checks(options: dict, strict: bool, delivery: frozenset[str] = frozenset()) -> list[Check]:
    """The checks of a definition's protocol options, but for the binding's delivery settings
    (protocols.py: values a broker may change, never a filter)."""
    checks = []
    for name, opt in options.items():
        if name in delivery:
            continue
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


@dataclass(frozen=True)
class Definition:
    idx: int
    xid: str
    family: str | None
    version: str | None
    ce: bool
    base_chain: tuple[str, ...]
    checks: tuple[Check, ...]
    templates: tuple[Check, ...] = field(default=())  # the checks with placeholders


def _guaranteed(check: Check) -> bool:
    """A check every CloudEvent reaching the matcher passes: the record-level reasons
    (missing_required_attribute, unsupported_specversion) took the others out before."""
    core = check.key.startswith("ce:") and check.key[3:] in cloudevents.REQUIRED
    plain = check.regex is None and check.type == "string"
    return core and plain and (check.value is None or (check.key == "ce:specversion" and check.value == "1.0"))


def declared_content_type(message: MessageDefinition) -> str | None:
    """The payload's media type as the definition declares it (`datacontenttype`, or the
    CloudEvents attribute's value; the catalog makes them agree), or None: inferred from the
    schema format it is a guess (resolve.py), a template it is checked as one (rule_uritemplate)."""
    declared = message.get("datacontenttype")
    if message.datacontenttype_inferred or not isinstance(declared, str) or "{" in declared:
        return None
    return declared


def compile_definition(idx: int, message: MessageDefinition, strict: bool = False) -> Definition:
    """One definition as data: its protocol, envelope and every check a record must pass."""
    is_ce = cloudevents.is_envelope(message.envelope)
    checks = []
    if is_ce:
        declared = message.attributes
        for name in [*declared, *(n for n in CE_TYPED if n not in declared)]:
            decl = declared.get(name, {})
            if isinstance(decl, dict):
                decl = {**CE_TYPED.get(name, {}), **decl}
                check = _check(f"ce:{name}", decl, strict)
                checks += [check] if check and not _guaranteed(check) else []
    content_type = declared_content_type(message)
    if content_type is not None:
        checks.append(_check(CONTENT_TYPE, {"value": content_type}, strict))
    family = protocol_family(message.protocol)
    family = None if family in (None, "NONE") else family
    binding = BY_FAMILY.get(family or "")
    delivery = binding.delivery_options if binding is not None else frozenset()
    checks += _option_checks(message.protocol_options, strict, delivery) if family else []
    version = message.protocol.partition("/")[2] if family and message.protocol else ""
    return Definition(idx, message.xid, family, version or None, is_ce, tuple(message.base_chain), tuple(checks),
                      tuple(c for c in checks if c.regex is not None and c.names))


# -- the rules, over a candidate definition `d`, one of its checks `c`, and the record's field value

def rule_value_equals(c: Check, value: str) -> bool:
    return c.equals is None or c.equals(value)


def rule_uritemplate(c: Check, value: str) -> re.Match | None:
    """The template's match of the whole value (its groups are the placeholder values), or None."""
    m = c.regex.match(value)
    return m if m is not None and m.end() == len(value) else None


def rule_attribute_type(c: Check, value: str, rec: Record) -> bool:
    if c.type == "timestamp":
        return rec.timestamp(c.key) is not None  # attributes.PARSERS' rfc3339, parsed once per record
    return attributes.accepts(c.type, value)


def rule_protocol(d: Definition, rec: Record, family: str | None, version: str | None) -> bool:
    if d.ce and not rec.is_ce:
        return False
    if d.family is None:
        return True
    return d.family == family and (d.version is None or version is None or d.version.upper() == version.upper())


def rule_same_placeholder_value(pairs: list[tuple[str, str]]) -> bool:
    return len(set(pairs)) == len({name for name, _ in pairs})


def rule_most_derived(cands: list[Definition]) -> list[Definition]:
    """The candidates every other one is a base of. Decided before the payload is looked at, so
    the derived message keeps the record when its own schema refuses the payload and its base's
    would accept it: the record is an instance of the derived message (its metadata says so),
    and storing it in the base's table would file it under the wrong definition; its dead letter
    (`schema_violation`) lists both candidates and is replayed once the catalog is fixed."""
    return [c for c in cands if all(o.xid == c.xid or o.xid in c.base_chain for o in cands)]


def evaluate(d: Definition, rec: Record) -> list[tuple[str, str]] | None:
    """Whether the record passes every check of `d`: its placeholder (name, value) pairs, or None."""
    fields = rec.fields
    pairs: list[tuple[str, str]] = []
    for c in d.checks:
        value = fields.get(c.key)
        if value is None:  # absent: only a check that declares no value and does not require one passes
            if c.required or c.value is not None or c.regex is not None:
                return None
            continue
        if not rule_value_equals(c, value) or not rule_attribute_type(c, value, rec):
            return None
        if c.regex is not None:
            m = rule_uritemplate(c, value)
            if m is None:
                return None
            pairs += zip(c.names, m.groups())
    return pairs if rule_same_placeholder_value(pairs) else None


def placeholder_pairs(d: Definition, rec: Record) -> list[tuple[str, str]]:
    return evaluate(d, rec) or []


class MatchStatus(StrEnum):
    """A record's match; the ones other than `matched` are also its dead-letter reasons."""

    MATCHED = "matched"
    NO_MATCH = "no_match"
    AMBIGUOUS = "ambiguous"  # two or more candidates, and their data schemas do not single one out
    MISSING = "missing_required_attribute"
    REJECTED = "schema_violation"  # two or more candidates, and every one's data schema rejects the payload


@dataclass
class Match:
    status: "MatchStatus"
    winner: Definition | None = None
    candidates: list[Definition] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    placeholders: dict[str, str] = field(default_factory=dict)
    detail: str | None = None  # why an ambiguous record stays ambiguous, or what each candidate rejects


class CompiledCatalog:
    """The catalog as lookup tables: CloudEvents type and protocol address -> definitions."""

    def __init__(self, messages: list[MessageDefinition], strict: bool = False):
        self.messages = messages
        self.definitions = [compile_definition(i, m, strict) for i, m in enumerate(messages)]
        self.by_type: dict[str, list[Definition]] = {}
        self.by_address: dict[tuple[str, str], list[Definition]] = {}
        self.unkeyed: list[Definition] = []
        # definitions with neither envelope nor protocol: the only ones a plain value may match
        self.takes_plain = any(not d.ce and d.family is None for d in self.definitions)
        for d in self.definitions:
            exact = {c.key: c.value for c in d.checks if c.value is not None}
            address = exact.get(f"opt:{ADDRESS_OPTIONS.get(d.family or '', '')}")
            if "ce:type" in exact:
                self.by_type.setdefault(exact["ce:type"], []).append(d)
            elif d.family and address is not None:
                self.by_address.setdefault((d.family, address), []).append(d)
            else:
                self.unkeyed.append(d)

    def deciding_attributes(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The CloudEvents attributes a structured event's match depends on, given that its
        record has no fault (record.record_fault): those whose value any check reads, and those
        only whose presence counts (`time`, checked for its type alone: a time that does not
        parse is already the record's fault). Always `type` and `datacontenttype` (the payload's
        media type)."""
        values, present = {"type", "datacontenttype"}, set()
        for d in self.definitions:
            for c in d.checks:
                name = c.key[3:] if c.key.startswith("ce:") else None
                if name == "time" and c.value is None and c.regex is None and c.type == "timestamp":
                    present.add(name)
                elif name is not None:
                    values.add(name)
        return tuple(sorted(values)), tuple(sorted(present - values))

    def match(self, rec: Record) -> Match:
        fields = rec.fields
        family = rec.binding.family if rec.binding is not None else None
        version = rec.protocol.partition("/")[2] or None if rec.protocol else None
        found = self.by_type.get(fields.get("ce:type"), [])
        if family is not None and rec.address is not None:
            found = found + self.by_address.get((family, rec.address), [])
        if self.unkeyed:
            found = found + self.unkeyed
        applicable = [d for d in found if rule_protocol(d, rec, family, version)]
        cands, placeholders = [], []
        for d in applicable:
            pairs = evaluate(d, rec)
            if pairs is not None:
                cands.append(d)
                placeholders.append(pairs)
        winner = cands[0] if len(cands) == 1 else None
        if winner is None and len(cands) > 1:
            derived = rule_most_derived(cands)
            winner = derived[0] if len(derived) == 1 else None
        if winner is not None:
            return Match(MatchStatus.MATCHED, winner, cands, placeholders=dict(placeholders[cands.index(winner)]))
        if len(cands) > 1:
            return Match(MatchStatus.AMBIGUOUS, None, cands)
        missing = list(dict.fromkeys(c.key for d in applicable for c in d.checks if c.required and fields.get(c.key) is None))
        return Match(MatchStatus.MISSING if missing else MatchStatus.NO_MATCH, None, cands, missing)
