"""The strict JSON reader: what orjson lets through silently is refused, and nothing else is."""

import json
from typing import Any

import msgspec
import pytest

from catalake.platform.records import strictjson


@pytest.mark.parametrize("text", [
    b'{"a": 1, "b": [1, 2.5, "x:y", {"c": null}]}',
    b'{ "a" : { "b" : 1 } , "t": "10:00:00" }',  # spaces around colons, colons in values
    b'{"a": 18446744073709551615, "b": -9223372036854775808, "c": 1e+30}',  # the 64-bit edges; a float
    b'{"a": "\\u003a", "b": "\\u00e9"}',  # escapes take the exact reading and pass
    b'[' * 128 + b']' * 128,
    b'"just a string"',
])
def test_json_that_is_strict_reads_as_the_standard_library_reads_it(text):
    assert strictjson.loads(text) == json.loads(text)


@pytest.mark.parametrize("text, reason, detail", [
    (b'{"a": Infinity}', "malformed_json", "Infinity is not a JSON number"),
    (b'{"a": 1e999}', "malformed_json", "too large for a double"),
    (b'{"a": {"b": 1, "b": 1}}', "malformed_json", "duplicate key 'b' in the object at /a"),
    (b'{"a" : 1, "a" : 2}', "malformed_json", "duplicate key 'a' in the object at /"),
    (b'{"a": "\\u003a", "a": 2}', "malformed_json", "duplicate key 'a'"),
    (b'{"a/b": [0, -99999999999999999999]}', "malformed_json", "at /a~1b/1 is outside the 64-bit range"),
    (b'{"a": "\xff"}', "invalid_utf8", "not valid UTF-8"),
    (b'[' * 129 + b']' * 129, "too_deep", "nested 129 levels deep"),
    (b'{"a": 1', "malformed_json", "not valid JSON"),
])
def test_json_that_is_not_strict_is_refused_with_its_reason(text, reason, detail):
    with pytest.raises(strictjson.NotJson) as refused:
        strictjson.loads(text)
    assert refused.value.reason == reason and detail in refused.value.detail


BATCH = [
    b'{"a":1,"b":[1,2.5,"x:y",{"c":null}]}',  # compact: written back the same
    b'{ "a" : { "b" : 1 } , "t": "10:00:00" }',
    b'{"a":1,"a":2}',  # a duplicate key
    b'{"a": 18446744073709551616}',  # beyond 64 bits
    b'{"a": 18446744073709551615, "c": 1e+30}',  # the edge, and a float written as e+
    b'{"a": "\\u003a"}',  # an escaped colon
    b'{"a":' + b'[' * 127 + b']' * 127 + b'}',  # 128 levels
    b'{"a":' + b'[' * 128 + b']' * 128 + b'}',  # 129 levels
    b'[' * 64 + b']' * 64,
]


class Member(msgspec.Struct, omit_defaults=True):
    """A decoder's type that keeps one member, `a`, and skips any other."""

    a: Any = None


@pytest.mark.parametrize("start", range(len(BATCH)))
def test_a_batch_names_every_text_a_member_of_which_the_decoder_did_not_keep(start):
    """`unkept` over a batch names every text the exact reading refuses for a duplicate key or
    its depth, and every text with a member the decoder skipped (and may name more: those are
    read exactly), whatever the texts around it. (An integer beyond 64 bits the decoder keeps is
    the typed column's to refuse: compiled.py.)"""
    texts = BATCH[start:] + BATCH[:start] + [b'{"a":1,"skipped":18446744073709551616}']
    values = [msgspec.json.decode(t, type=Member) if t.startswith(b"{") else msgspec.json.decode(t) for t in texts]
    unsure = set(strictjson.unkept(texts, values, msgspec.json.encode))
    for i, text in enumerate(texts):
        try:
            strictjson.loads(text)
        except strictjson.NotJson as exc:
            assert i in unsure or "64-bit" in exc.detail and b"skipped" not in text, text
    assert len(texts) - 1 in unsure  # the skipped member
    alone = strictjson.unkept(texts[:1], values[:1], msgspec.json.encode)
    assert alone == ([] if texts[0] in (BATCH[3], BATCH[6], BATCH[8]) else [0])  # those keep every member
