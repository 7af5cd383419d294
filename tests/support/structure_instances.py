"""Hypothesis strategies for JSON Structure: instances of a schema as a producer sends them (the
wire form: string-encoded wide integers and decimals, base64 binary, altnames as keys) paired
with the value the table must hold (the schema's names, typed). Written from the spec
(json-structure/core, validation, alternate-names), independently of the platform's typing."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import re

import orjson
from hypothesis import strategies as st

from catalake.platform.problems import split_pointer

UTC = dt.timezone.utc
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
NAME = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAME, inner, max_size=3), max_leaves=6)
INTEGER_RANGES = {
    "int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-2**31, 2**31 - 1), "integer": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
    "int128": (-(10**38 - 1), 10**38 - 1), "uint128": (0, 10**38 - 1),  # what decimal(38,0) holds
}
WIRE_STRINGS = {"int64", "uint64", "int128", "uint128"}
AS_DECIMAL = {"uint64", "int128", "uint128"}


def pair(strategy, expected=lambda v: v):
    return strategy.map(lambda v: (v, expected(v)))


class Instances:
    def __init__(self, document: dict):
        self.document = document

    def lookup(self, ref: str) -> dict:
        node = self.document
        for token in split_pointer(ref):
            node = node[token]
        return node

    def named(self, name: str) -> dict:
        def search(defs):
            for key, value in (defs or {}).items():
                if isinstance(value, dict):
                    if key == name and "type" in value:
                        return value
                    if "type" not in value:
                        found = search(value)
                        if found:
                            return found
            return None
        return search(self.document.get("definitions"))

    # -- schemas
    def schema(self, schema: dict, depth: int = 0):
        if "type" not in schema and "$root" in schema:
            return self.schema(self.lookup(schema["$root"]), depth)
        if "type" not in schema and "$ref" in schema:
            return self.schema(self.lookup(schema["$ref"]), depth)
        return self.type_(schema.get("type"), schema, depth)

    def member(self, member, depth: int):
        if isinstance(member, (str, list)):
            return self.type_(member, {}, depth)
        return self.schema(member, depth)

    def type_(self, type_, schema: dict, depth: int):
        if isinstance(type_, list):
            others = [t for t in type_ if t != "null"]
            assert len(others) == 1, f"unions of several types are not generated: {type_}"
            # the union's own keywords (minimum, enum, ...) constrain its one non-null member
            value = self.type_(others[0], schema, depth) if isinstance(others[0], str) else self.member(others[0], depth)
            return st.just((None, None)) | value if "null" in type_ else value
        if isinstance(type_, dict):
            return self.schema(self.lookup(type_["$ref"]) if "$ref" in type_ else type_, depth)
        if type_ == "object":
            return self.object(schema, depth)
        if type_ in ("array", "set"):
            items = self.member(schema.get("items", {"type": "string"}), depth + 1)
            low = schema.get("minItems", 0)
            high = schema.get("maxItems", max(low, 3))
            unique = type_ == "set" or schema.get("uniqueItems") is True
            return st.lists(items, min_size=low, max_size=high, unique_by=(lambda p: orjson.dumps(p[0])) if unique else None
                            ).map(lambda ps: ([w for w, _ in ps], [e for _, e in ps]))
        if type_ == "map":
            values = self.member(schema.get("values", {"type": "string"}), depth + 1)
            return st.dictionaries(NAME, values, max_size=3).map(
                lambda d: ({k: w for k, (w, _) in d.items()}, {k: e for k, (_, e) in d.items()}))
        if type_ in ("any", "tuple"):
            return pair(JSON, lambda v: orjson.dumps(v).decode())
        return self.primitive(type_, schema)

    def object(self, schema: dict, depth: int):
        props, required = {}, set()
        bases = schema.get("$extends")
        for ref in bases if isinstance(bases, list) else [bases] if bases else []:
            base = self.lookup(ref)
            for name, prop in (base.get("properties") or {}).items():
                props.setdefault(name, prop)
            required |= {r for r in base.get("required") or [] if isinstance(r, str)}
        props.update(schema.get("properties") or {})
        required |= {r for r in schema.get("required") or [] if isinstance(r, str)}
        if not props:
            return pair(st.dictionaries(NAME, JSON, max_size=3), lambda v: orjson.dumps(v).decode())
        fields = []
        for name, prop in props.items():
            alt = prop.get("altnames") if isinstance(prop, dict) else None
            wire = alt.get("json", name) if isinstance(alt, dict) else name
            value = self.member(prop, depth + 1)
            present = st.just(True) if name in required else st.booleans()
            fields.append(st.tuples(st.just(name), st.just(wire), present, value))

        def build(parts):
            wire_obj, expected = {}, {}
            for name, wire, present, (w, e) in parts:
                if present:
                    wire_obj[wire] = w
                expected[name] = e if present else None
            return wire_obj, expected

        return st.tuples(*fields).map(build)

    def primitive(self, type_: str, schema: dict):
        if "enum" in schema:
            values = schema["enum"]
            return pair(st.sampled_from(values), self.typed(type_))
        if "const" in schema:
            return pair(st.just(schema["const"]), self.typed(type_))
        if type_ in INTEGER_RANGES:
            low, high = INTEGER_RANGES[type_]
            low = max(low, int(schema.get("minimum", low)), int(schema.get("exclusiveMinimum", low - 1)) + 1)
            high = min(high, int(schema.get("maximum", high)), int(schema.get("exclusiveMaximum", high + 1)) - 1)
            ints = st.integers(low, high)
            wire = str if type_ in WIRE_STRINGS else (lambda n: n)
            typed = decimal.Decimal if type_ in AS_DECIMAL else (lambda n: n)
            return ints.map(lambda n: (wire(n), typed(n)))
        if type_ in ("number", "double", "float", "float8"):
            width = 64 if type_ in ("number", "double") else 32
            floats = st.floats(min_value=schema.get("minimum"), max_value=schema.get("maximum"),
                               allow_nan=False, allow_infinity=False, width=width)
            return pair(floats)
        if type_ == "decimal":
            precision, scale = schema.get("precision", 34), schema.get("scale", 7)
            limit = decimal.Decimal(10) ** (precision - scale) - 1
            values = st.decimals(min_value=-limit, max_value=limit, places=scale, allow_nan=False, allow_infinity=False)
            return values.map(lambda d: (str(d), d))
        if type_ == "boolean":
            return pair(st.booleans())
        if type_ == "binary":
            return st.binary(max_size=16).map(lambda b: (base64.b64encode(b).decode(), b))
        if type_ == "date":
            return st.dates(dt.date(1900, 1, 1), dt.date(2200, 12, 31)).map(lambda d: (d.isoformat(), d))
        if type_ in ("datetime", "timestamp"):
            return st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC)).map(
                lambda t: (t.isoformat().replace("+00:00", "Z"), t))
        if type_ == "time":
            return pair(st.times().map(lambda t: t.replace(microsecond=0).isoformat()))
        if type_ == "duration":
            return pair(st.tuples(st.integers(0, 99), st.integers(0, 59)).map(lambda hm: f"PT{hm[0]}H{hm[1]}M"))
        if type_ == "uuid":
            return pair(st.uuids().map(str))
        if type_ == "uri":
            return pair(NAME.map(lambda n: f"https://example.com/{n}"))
        if type_ == "jsonpointer":
            # the SDK takes only RFC 6901's URI fragment form with a token ("#/a"); the platform
            # also takes the string form ("/a", "": test_producer_wire_forms)
            return pair(st.lists(NAME, min_size=1, max_size=3).map(lambda p: "#" + "".join("/" + x for x in p)))
        if type_ == "null":
            return st.just((None, None))
        return self.string(schema)

    @staticmethod
    def typed(type_: str):
        """An enum/const value as the table holds it."""
        if type_ in AS_DECIMAL or type_ == "decimal":
            return lambda v: decimal.Decimal(str(v))
        if type_ in WIRE_STRINGS:
            return int
        return lambda v: v

    @staticmethod
    def string(schema: dict):
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if "pattern" in schema:
            strings = st.from_regex(re.compile(schema["pattern"]), fullmatch=True)
            return pair(strings.filter(lambda s: low <= len(s) <= (high if high is not None else len(s))))
        return pair(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=low,
                            max_size=high if high is not None else max(low, 12)))


def instances(schema: dict, document: dict | None = None, type_name: str | None = None):
    """(wire JSON value, the typed value its table holds) of `schema`."""
    maker = Instances(document if isinstance(document, dict) else schema)
    if type_name:
        schema = maker.named(type_name)
    return maker.schema(schema)
