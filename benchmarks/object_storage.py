"""The whole `catalake run` with the landing zone and the warehouse on local disk, then on a local
S3 server (issue 26), on the same day of the workload (workload.py: N types fed evenly).

    python benchmarks/object_storage.py --records 1000000 --definitions 100 [--repeats 2] [--work DIR]

The S3 server is moto's standalone server on the loopback (tests/support/services.py), which runs in
Python on the same 2 cores as Spark: its own CPU time is part of what the S3 run measures, and
is reported (`server_cpu_seconds`). Each side gets one untimed first run (tables created), then
`--repeats` timed runs (`catalake run --date D --json --no-analytics` in a fresh process); the
minimum is reported with the ratio S3 / disk. Results are JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from run import measure  # noqa: E402
from workload import DAY, write  # noqa: E402

from support.services import s3_server  # noqa: E402


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(env: dict, repeats: int) -> tuple[list[float], dict, dict]:
    catalake = [str(Path(sys.executable).parent / "catalake"), "run", "--date", DAY, "--json", "--no-analytics"]
    measure(catalake, env)  # the tables exist afterwards; not timed
    walls, peak, result = [], {}, {}
    for _ in range(repeats):
        wall, rss, stdout = measure(catalake, env)
        walls.append(round(wall, 1))
        peak = rss
        result = json.loads(stdout.strip().splitlines()[-1])
    return walls, peak, result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--definitions", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    catalog, landing = write(work, args.definitions, args.records)
    base = {**os.environ, "CATALAKE_CATALOG": str(catalog)}
    rows = []

    warehouse = work / f"warehouse-disk-{args.definitions}-{args.records}"
    shutil.rmtree(warehouse, ignore_errors=True)
    home = work / "dagster_home_disk"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    walls, rss, result = timed({**base, "CATALAKE_LANDING": str(landing), "CATALAKE_WAREHOUSE": str(warehouse),
                                "DAGSTER_HOME": str(home)}, args.repeats)
    rows.append({"storage": "local disk", "seconds": min(walls), "all_seconds": walls, "records": result["records"],
                 "tables_fed": sum(1 for n in result["tables"].values() if n), "peak_rss_mib": rss.get("total")})

    server_dir = work / "s3-server"
    shutil.rmtree(server_dir, ignore_errors=True)
    server_dir.mkdir()
    with s3_server(server_dir) as s3:
        os.environ.update(s3.environment)
        uploaded = s3.upload(landing, s3.bucket("bench-landing") + "/landing")
        home = work / "dagster_home_s3"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir()
        server = next(p for p in Path("/proc").iterdir() if p.name.isdigit() and b"moto_server" in (p / "cmdline").read_bytes()
                      and s3.endpoint.rsplit(":", 1)[1].encode() in (p / "cmdline").read_bytes())
        before = _cpu_seconds(int(server.name))
        walls, rss, result = timed({**base, **s3.environment, "CATALAKE_LANDING": uploaded,
                                    "CATALAKE_WAREHOUSE": s3.bucket("bench-lake") + "/lake", "DAGSTER_HOME": str(home)},
                                   args.repeats)
        cpu = _cpu_seconds(int(server.name)) - before
    rows.append({"storage": "S3 (moto server, loopback)", "seconds": min(walls), "all_seconds": walls,
                 "records": result["records"], "tables_fed": sum(1 for n in result["tables"].values() if n),
                 "peak_rss_mib": rss.get("total"), "server_cpu_seconds_all_runs": round(cpu, 1)})
    rows.append({"ratio_s3_to_disk": round(rows[1]["seconds"] / rows[0]["seconds"], 2),
                 "definitions": args.definitions, "records": args.records})
    for row in rows:
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
