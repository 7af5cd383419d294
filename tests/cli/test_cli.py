"""The `catalake` console script, run as a user runs it."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from support.paths import DEMO_CATALOG


def run(*args):
    return subprocess.run([sys.executable, "-m", "catalake.cli", *args], capture_output=True, text=True, timeout=120)


def test_validate_ok():
    out = run("catalog", "validate", str(DEMO_CATALOG))
    assert out.returncode == 0
    assert out.stdout == ""
    assert "9 message definition(s): 0 error(s)" in out.stderr


def test_validate_reports_one_line_per_problem(tmp_path):
    doc = json.loads((DEMO_CATALOG / "bikeshare.xreg.json").read_text())
    rides = doc["messagegroups"]["bikeshare.rides"]["messages"]
    rides["bikeshare.rides.RideStarted"]["envelope"] = "CloudEvents"
    rides["bikeshare.rides.RideEnded"]["envelopemetadata"]["type"]["required"] = False
    bad = tmp_path / "bad.xreg.json"
    bad.write_text(json.dumps(doc))
    out = run("catalog", "validate", str(bad), str(DEMO_CATALOG / "schemas.xreg.json"))
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{bad}#/messagegroups/bikeshare.rides/messages/bikeshare.rides.RideEnded/envelopemetadata/type/required: ")
    assert "[envelope-format]" in lines[1]


def test_show_lists_groups_and_messages():
    out = run("catalog", "show", str(DEMO_CATALOG))
    assert out.returncode == 0
    assert "bikeshare.docks.mqtt.DockStatus" in out.stdout
    assert "5 group(s), 9 message definition(s)" in out.stdout


def test_show_real_catalog(shared_data):
    out = run("catalog", "show", str(shared_data / "xregistry-codegen/test/xreg/inkjet-protocol-variants.xreg.json"))
    assert out.returncode == 0 and "3 group(s), 15 message definition(s)" in out.stdout


def test_schema_show_prints_the_derived_tree():
    out = run("schema", "show", "bikeshare.rides.kafka.RideEnded", "--catalog", str(DEMO_CATALOG))
    assert out.returncode == 0, out.stderr
    assert "/messagegroups/bikeshare.rides.kafka/messages/bikeshare.rides.kafka.RideEnded" in out.stdout
    assert " |-- ended_at: timestamp (nullable = false)" in out.stdout
    assert " |    |-- currency: string (nullable = false)" in out.stdout


def test_schema_show_unknown_message():
    out = run("schema", "show", "nope", "--catalog", str(DEMO_CATALOG))
    assert out.returncode == 1 and "0 message definitions match 'nope'" in out.stderr


def test_schema_show_of_a_broken_schema_is_one_line_and_exits_2(tmp_path):
    """A data schema that cannot be mapped (a `$ref` to nothing) is an error the catalog's author
    fixes: `catalake: <why>`, exit 2, as every CatalakeError (catalake.cli.main)."""
    catalog = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, catalog)
    doc = json.loads((catalog / "schemas.xreg.json").read_text())
    (version,) = doc["schemagroups"]["bikeshare.payments.json"]["schemas"]["PaymentCaptured"]["versions"].values()
    version["schema"]["properties"]["amount"] = {"$ref": "#/definitions/missing"}
    (catalog / "schemas.xreg.json").write_text(json.dumps(doc))
    out = run("schema", "show", "bikeshare.payments.PaymentCaptured", "--catalog", str(catalog))
    assert out.returncode == 2 and out.stdout == "", out.stderr
    (line,) = out.stderr.splitlines()
    assert line.startswith("catalake: /messagegroups/bikeshare.payments/messages/bikeshare.payments.PaymentCaptured: "
                           "$ref '#/definitions/missing' does not resolve"), line


def test_a_day_that_is_not_a_partition_is_one_line_before_anything_starts(tmp_path):
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "run", "--date", "2099-01-01", "--no-analytics"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CATALAKE_WAREHOUSE": str(tmp_path / "warehouse")})
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("not a partition: 2099-01-01; the partitions are the days from CATALAKE_START_DATE")
    assert len(out.stderr.splitlines()) == 1 and not (tmp_path / "warehouse").exists()


@pytest.mark.parametrize("args", [
    ["run", "--date", "20-11-2026"], ["run", "--date", "2026-02-30"], ["run", "--date", "2026/11/20"],
    ["run", "--from", "2026-11-21", "--to", "2026-11-20"], ["validate", "--date", "2026-13-01"],
    ["drift", "--date", "yesterday"], ["replay", "--from", "2026-1-1"],
])
def test_a_wrong_date_is_one_line_and_exit_code_2(args, tmp_path):
    out = subprocess.run([sys.executable, "-m", "catalake.cli", *args], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CATALAKE_WAREHOUSE": str(tmp_path / "wh")})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("catalake: --") and "Traceback" not in out.stderr


def test_a_sql_typo_is_one_line_without_a_jvm(tmp_path):
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "sql", "SELEC 1"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CATALAKE_WAREHOUSE": str(tmp_path / "wh")})
    assert out.returncode == 2 and out.stderr.strip().splitlines() == ['catalake: sql: Parser Error: syntax error at or near "SELEC"']


def test_a_bad_catalog_in_run_is_one_line_naming_its_first_problem(tmp_path):
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "x.xreg.json").write_text(json.dumps({"messagegroups": {"g": {"messages": {
        "m": {"envelope": "CloudEvents/1.0", "basemessage": "/nope"}}}}}))
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "run", "--date", "2026-11-20", "--no-analytics"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "CATALAKE_CATALOG": str(catalog), "CATALAKE_WAREHOUSE": str(tmp_path / "wh")})
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert "invalid message catalog" in lines[0] and "[basemessage-dangling]" in lines[0] and "/nope" in lines[0]


def test_show_of_a_broken_catalog_prints_its_problems_and_no_empty_table(tmp_path):
    bad = tmp_path / "bad.xreg.json"
    bad.write_text("{ not json")
    out = run("catalog", "show", str(bad))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines()[0].startswith(f"{bad}:line 1, column 3: [json-syntax]")
    assert "the catalog is invalid (1 error(s))" in out.stderr


def test_every_subcommand_help_opens_with_what_it_does(capsys):
    from catalake.cli import main

    for command in ("catalog show", "catalog validate", "schema show", "run", "tables", "sql", "dbt project",
                    "validate", "drift", "replay", "docs", "state"):
        with pytest.raises(SystemExit) as exit:
            main([*command.split(), "--help"])
        out = capsys.readouterr().out
        assert exit.value.code == 0 and out.startswith(f"usage: catalake {command}")
        description = out.split("\n\n")[1].strip()
        assert description and not description.startswith(("positional", "options")), (command, out)
    assert "classify landed events of one day" in run("--help").stdout  # as the console script prints it


def test_state_writes_what_every_load_reads_and_an_invalid_catalog_exits_1(tmp_path):
    """`catalake state`, the bundled code location's `dg utils refresh-defs-state`: a load after it
    reads the state (no warning, nothing written); from an invalid catalog it keeps the last valid
    definitions and exits 1 naming the problem."""
    import shutil

    catalog = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, catalog)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("CATALAKE_", "DAGSTER_IS_DEV"))},
           "CATALAKE_CATALOG": str(catalog), "CATALAKE_WAREHOUSE": str(tmp_path / "wh")}
    state = subprocess.run([sys.executable, "-m", "catalake.cli", "state", "--no-analytics"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    path = tmp_path / "wh" / "catalog" / "state.json"
    assert state.returncode == 0 and state.stdout.splitlines()[0] == f"the code location's state: {path}"
    assert "9 message definition(s)" in state.stdout and "dbt models: no" in state.stdout
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    load = "import catalake.definitions as d; print(len(list(d.defs.resolve_all_asset_keys())))"
    loaded = subprocess.run([sys.executable, "-c", load], env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, check=True)
    assert int(loaded.stdout.split()[-1]) == 15 and "NoStateWarning" not in loaded.stderr
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before

    doc = catalog / "bikeshare.xreg.json"
    doc.write_text(doc.read_text().replace('"envelope": "CloudEvents/1.0"', '"envelope": 42', 1))
    invalid = subprocess.run([sys.executable, "-m", "catalake.cli", "state", "--no-analytics"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert invalid.returncode == 1 and "9 message definition(s)" in invalid.stdout
    assert invalid.stderr.startswith(f"The message catalog is invalid: {doc}")



def test_tables_shows_how_many_files_carry_column_statistics(tmp_path, monkeypatch, capsys):
    """`catalake tables`: each table's live files with column statistics, of its live files, and
    when some lack them, a line after the table saying what records them."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from catalake.cli import main
    from catalake.platform.uris import Location
    from catalake.platform.warehouse.commit import commit_statistics
    from catalake.platform.warehouse.files import WrittenFile
    from support.tables import small_warehouse

    root = small_warehouse(tmp_path / "warehouse", broken=False)
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(root))
    assert main(["tables"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "statistics" and len(lines) == 4
    assert lines[2].split()[0] == "deadletter" and lines[2].endswith(" 1/1 files")
    assert lines[3].split()[0] == "shop__orders" and lines[3].endswith(" 2/2 files")

    orders = root / "messages" / "shop__orders"  # one file added again with its row count only, as older releases did
    table = DeltaTable(str(orders))
    first = pa.table(table.get_add_actions(flatten=False)).to_pylist()[0]
    commit_statistics(Location.of(orders), table, [WrittenFile(first["path"], first["size_bytes"], {}, first["num_records"])])
    assert main(["tables"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].endswith(" 1/2 files") and len(lines) == 5
    assert "1 table(s)" in lines[4] and "`catalake maintain --statistics`" in lines[4]
