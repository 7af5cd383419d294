"""A catalog's patterns cannot stall a day: RE2 runs them in linear time, a pattern RE2 cannot run
(a backreference, lookaround) gets a warning and a time budget per value, and verdicts stay those
of the ECMA 262 translation on every pattern of the public catalogs."""

import datetime as dt
import functools
import json
import re
import shutil
import threading
from pathlib import Path

import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings, strategies as st

from catalake.platform.catalog import load_catalog
from catalake.platform.patterns import (BudgetedPattern, LinearPattern, PatternError, PatternTimeout,
                                        backtracking_construct, compile_pattern)
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.schemas.payload import FORMATS
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables, schema_problems, sync_message_tables
from catalake.platform.warehouse.store import DeltaStore
from support.paths import DEMO_CATALOG, SHARED_DATA
from support.runs import no_spark

DAY = dt.date(2026, 11, 20)
EXPONENTIAL = "^(a+)+$"  # valid JSON Schema; Python's re takes about half an hour on 36 a's and a '!'
BACKREFERENCE = r"^(a|a)*\1$"  # no linear-time form: the regex module times out on 30 a's and a '!'
HOSTILE = ["a" * 36 + "!", "a" * 1_000 + "!", "a" * 100_000 + "!"]



def catalog_with_pattern(tmp_path: Path, pattern: str) -> Path:
    """The demo catalog, with `pattern` on PaymentCaptured's payment_id."""
    folder = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, folder)
    path = folder / "schemas.xreg.json"
    document = json.loads(path.read_text())
    schema = document["schemagroups"]["bikeshare.payments.json"]["schemas"]["PaymentCaptured"]
    version = next(iter(schema["versions"].values()))
    version["schema"]["properties"]["payment_id"]["pattern"] = pattern
    path.write_text(json.dumps(document))
    return folder


def payment(n: int, payment_id: str) -> str:
    return json.dumps({"specversion": "1.0", "id": f"p-{n}", "source": "https://billing.bikeshare.example/payments",
                       "type": "bikeshare.payments.PaymentCaptured", "time": "2026-11-20T06:40:30Z",
                       "datacontenttype": "application/json",
                       "data": {"payment_id": payment_id, "ride_id": "R-941000", "amount": 5.8, "currency": "EUR",
                                "method": "wallet"}, "subject": "rides/R-941000"})


def classify_day(tmp_path: Path, catalog_folder: Path, lines: list[str]):
    """The day through local processes, with a liveness guard (a stalled day fails, it does not hang)."""
    landing = tmp_path / "landing" / DAY.isoformat()
    landing.mkdir(parents=True)
    (landing / "payments.jsonl").write_text("\n".join(lines) + "\n")
    catalog = load_catalog([catalog_folder])
    tables, _ = message_tables(catalog, [catalog_folder])
    store = DeltaStore(no_spark, tmp_path / "warehouse", "delta-rs", master="local[2]")
    sync_message_tables(store, tables)
    out = {}
    worker = threading.Thread(target=lambda: out.update(result=classify_partition(
        no_spark, store, tables, str(tmp_path / "landing"), DAY, local_bytes=1 << 30)), daemon=True)
    worker.start()
    worker.join(timeout=300)
    assert "result" in out, "the day did not finish: a pattern stalled it"
    result = out["result"]
    ok, counts = conservation(store, tables, DAY, result.records, result.stored)
    assert ok, counts
    dead = [r for r in DeltaTable(store.path(DEADLETTER_TABLE)).to_pyarrow_table().to_pylist() if r["event_date"] == DAY]
    return result, dead, tables


def test_an_exponential_pattern_runs_in_linear_time_and_each_hostile_value_is_one_dead_letter(tmp_path):
    folder = catalog_with_pattern(tmp_path, EXPONENTIAL)
    ordinary = [payment(n, "a" * (1 + n % 20)) for n in range(1_000)]
    hostile = [payment(1_000 + i, value) for i, value in enumerate(HOSTILE)]
    result, dead, _ = classify_day(tmp_path, folder, ordinary + hostile)
    assert result.records == 1_003 and result.deadletter == {"schema_violation": 3}
    assert sum(n for name, n in result.stored.items() if name != DEADLETTER_TABLE) == 1_000
    assert sorted(r["event_id"] for r in dead) == ["p-1000", "p-1001", "p-1002"]
    for row in dead:  # a clear reason: the field, the value's start and the pattern it does not match
        assert row["reason"] == "schema_violation"
        assert "payment_id" in row["detail"] and "does not match '^(a+)+$'" in row["detail"]
    assert schema_problems(message_tables(load_catalog([folder]), [folder])[0]) == []  # linear: no warning


def test_a_backreference_gets_a_warning_and_a_hostile_value_is_a_pattern_timeout(tmp_path):
    folder = catalog_with_pattern(tmp_path, BACKREFERENCE)
    tables, _ = message_tables(load_catalog([folder]), [folder])
    warnings = [p for p in schema_problems(tables) if p.rule == "pattern-backtracks"]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    assert warnings[0].file.endswith("bikeshare.xreg.json") and "PaymentCaptured" in warnings[0].pointer
    assert "/properties/payment_id/pattern" in warnings[0].message and "a backreference" in warnings[0].message

    ordinary = [payment(n, "aa") for n in range(50)] + [payment(50, "ab")]
    result, dead, _ = classify_day(tmp_path, folder, ordinary + [payment(99, "a" * 30 + "!")])
    assert result.records == 52 and result.deadletter == {"schema_violation": 1, "pattern_timeout": 1}
    assert sum(n for name, n in result.stored.items() if name != DEADLETTER_TABLE) == 50
    reasons = {r["event_id"]: r for r in dead}
    assert reasons["p-50"]["reason"] == "schema_violation"  # evaluated within budget: does not match
    timeout = reasons["p-99"]
    assert timeout["reason"] == "pattern_timeout"
    assert timeout["detail"].startswith("data.payment_id: ") and BACKREFERENCE in timeout["detail"].replace("\\\\", "\\")
    assert timeout["candidates"] == ["/messagegroups/bikeshare.payments/messages/bikeshare.payments.PaymentCaptured"]


def test_the_cli_warns_of_a_backtracking_pattern_naming_file_pointer_and_construct(tmp_path, capsys):
    from catalake.cli import main

    folder = catalog_with_pattern(tmp_path, "^(?=x)x+$")
    assert main(["catalog", "validate", str(folder)]) == 0
    captured = capsys.readouterr()
    err = captured.out + captured.err
    assert "bikeshare.xreg.json#/messagegroups/bikeshare.payments/messages/bikeshare.payments.PaymentCaptured" in err
    assert "[pattern-backtracks]" in err and "lookaround" in err and "/properties/payment_id/pattern" in err


def test_patterns_run_on_re2_unless_they_backtrack():
    assert isinstance(compile_pattern(EXPONENTIAL), LinearPattern)
    assert compile_pattern(EXPONENTIAL).search("a" * 1_000_000 + "!") is None
    assert compile_pattern(r"^(?<year>\d{4})-\u00e9$").search("2026-é")  # named groups and \uXXXX translated
    assert compile_pattern(r"^\d+$").search("١٢٣") is None  # \d is ASCII, as in ECMA 262
    assert compile_pattern("^a$").search("a\n") is None  # $ is the end of the value, as in ECMA 262
    for pattern, construct in ((BACKREFERENCE, "a backreference"), (r"^(?<x>a)\1$", "a backreference"),
                               ("^(?!b)", "lookaround"), ("(?<=a)b", "lookaround")):
        assert isinstance(compile_pattern(pattern), BudgetedPattern)
        assert construct in backtracking_construct(pattern)
    assert compile_pattern(r"^(?<x>a)\1$").search("aa") and compile_pattern("(?<=a)b").search("ab")
    with pytest.raises(PatternTimeout, match=r"payment_id: a value of 31 character"):
        compile_pattern(BACKREFERENCE, "payment_id").search("a" * 30 + "!")
    with pytest.raises(PatternError, match=r"\[\^\] \(any character\)"):
        compile_pattern("[^]")
    assert backtracking_construct(EXPONENTIAL) is None


def public_patterns() -> list[str]:
    """Every `pattern` and `patternProperties` pattern in the public catalogs and schemas."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.add(node["pattern"])
            if isinstance(node.get("patternProperties"), dict):
                found.update(node["patternProperties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in SHARED_DATA.rglob("*.json"):
        try:
            walk(json.loads(path.read_text()))
        except (ValueError, UnicodeDecodeError):
            continue
    usable = []
    for pattern in sorted(found):
        try:
            compile_pattern(pattern)
            usable.append(pattern)
        except PatternError:
            continue
    return usable


# the public catalogs hold few patterns: the payload formats' and common ones are compared too
COMMON = [FORMATS[name] for name in ("uuid", "email", "uri", "hostname", "ipv4")] + [
    r"^R-[0-9]{6}$", r"^[A-Z]{3}$", r"^\+?[1-9]\d{1,14}$", r"^\d{4}-\d{2}-\d{2}$", r"^(?<year>\d{4})-(?<month>\d{2})$",
    r"^[a-z]+(\.[a-z]+)*$", r"^\w+@\w+\.\w{2,}$", r"\bbike\b", r"^\s*\S+\s*$", r"^[^\s/]+(/[^\s/]+)*$", r"^(foo|bar|baz)?-\d*$"]
PUBLIC = (public_patterns() if SHARED_DATA.is_dir() else []) + COMMON
ASCII = st.characters(codec="ascii", exclude_categories=["Cc"])


@functools.cache
def compared(pattern: str) -> tuple:
    """(the ECMA 262 translation, a strategy of values it matches, catalake's compiled pattern):
    built once per pattern, not once per example (what the test draws and checks is the same)."""
    reference = re.compile(re.sub(r"(?<!\\)\(\?<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P<\1>", pattern), re.ASCII)
    return reference, st.from_regex(reference, alphabet=ASCII), compile_pattern(pattern)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_verdicts_equal_the_ecma_262_translation_on_every_public_pattern(data):
    """RE2 and today's engine (Python's re, ASCII, named groups translated) agree on values drawn
    to match each public pattern and on those values changed, for every pattern at once."""
    assert len(PUBLIC) >= len(COMMON) + 4  # the public catalogs' four patterns
    for pattern in PUBLIC:
        reference, values, compiled = compared(pattern)
        matching = data.draw(values, label=pattern)
        for value in (matching, matching + "!", matching[1:], "x" + matching, matching.upper()):
            value = value.rstrip("\n")  # `$` before a final line break: Python's alone, not ECMA 262's
            assert (compiled.search(value) is not None) == (reference.search(value) is not None), (pattern, value)
