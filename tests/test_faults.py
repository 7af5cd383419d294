"""A partition run killed while it writes (issue 20): the re-run gives the tables a clean run
gives, and nothing the killed run left stays behind."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

DAY = "2026-11-20"


def catalake_run(env: dict, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "catalake.cli", "run", "--date", DAY, "--json", "--no-analytics"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def part_files(warehouse: Path) -> set[Path]:
    return {p for p in warehouse.glob(f"*/*/event_date={DAY}/part-*.parquet")} | set(
        warehouse.glob(f"deadletter/event_date={DAY}/part-*.parquet"))


def committed(warehouse: Path) -> set[Path]:
    files = set()
    for log in warehouse.glob("**/_delta_log"):
        table = log.parent
        files |= {table / uri.split(str(table) + "/", 1)[-1] for uri in DeltaTable(str(table)).file_uris()}
    return {Path(os.path.normpath(f)) for f in files}


def day_rows(warehouse: Path) -> dict[str, list]:
    """Every table's rows of the day, without the run's timestamp, in a stable order."""
    out = {}
    for log in sorted(warehouse.glob("**/_delta_log")):
        table = log.parent
        if table.name == "catalog" or "expectations" in table.parts:
            continue
        rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
        rows = [{k: v for k, v in r.items() if k != "ingested_at"} for r in rows if str(r.get("event_date")) == DAY]
        out[str(table.relative_to(warehouse))] = sorted(rows, key=lambda r: (r["source_file"], r["source_line"]))
    return out


def dead_spills() -> list[str]:
    from catalake.platform.classifier import SPILL_PREFIX
    from catalake.platform.runs import alive

    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(SPILL_PREFIX)
            and not alive(int(n[len(SPILL_PREFIX):].split("-", 1)[0]))]


@pytest.mark.jvm
def test_a_run_killed_while_writing_is_cleaned_by_the_rerun(tmp_path):
    landing = tmp_path / "landing"
    subprocess.run([sys.executable, "-m", "catalake.demo.generate", str(landing), "--start", DAY, "--days", "1",
                    "--rides", "40000"], check=True, capture_output=True)
    env = {**os.environ, "CATALAKE_LANDING": str(landing)}
    env.pop("DAGSTER_HOME", None)

    killed = tmp_path / "killed"
    run = catalake_run({**env, "CATALAKE_WAREHOUSE": str(killed)}, start_new_session=True)
    deadline = time.monotonic() + 300
    while not part_files(killed) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)  # the driver, the JVM and the Python workers
    run.wait()
    assert run.returncode == -signal.SIGKILL, "the run ended before it could be killed while writing"
    left = part_files(killed) - committed(killed)
    assert left, "the kill left no uncommitted file: nothing to prove"
    assert list((killed / "_catalake" / "runs").glob("*.json")), "the killed run's record is gone"

    rerun = catalake_run({**env, "CATALAKE_WAREHOUSE": str(killed)})
    out, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err.decode()[-3000:]
    clean = catalake_run({**env, "CATALAKE_WAREHOUSE": str(tmp_path / "clean")})
    out, err = clean.communicate(timeout=600)
    assert clean.returncode == 0, err.decode()[-3000:]

    assert day_rows(killed) == day_rows(tmp_path / "clean")
    assert part_files(killed) <= committed(killed) and not (left & part_files(killed))
    assert not list((killed / "_catalake" / "runs").glob("*.json"))
    assert not dead_spills()


SESSION_REPLACED = """
import os, signal, time
from catalake.resources.spark import SparkSessionResource

resource = SparkSessionResource()
first = resource.session
assert first.range(3).count() == 3
pid = first._jvm.java.lang.ProcessHandle.current().pid()
os.kill(pid, signal.SIGKILL)  # as an OutOfMemoryError ends it
while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
    time.sleep(0.1)
second = resource.session
assert second.range(5).count() == 5
assert second._jvm.java.lang.ProcessHandle.current().pid() != pid
print("replaced")
"""


@pytest.mark.jvm
def test_a_dead_spark_session_is_replaced_on_next_use():
    out = subprocess.run([sys.executable, "-c", SESSION_REPLACED], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "replaced", out.stderr[-3000:]
