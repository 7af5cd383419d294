"""Deterministic demo events for the bike-share catalog, laid out as the landing-zone contract says.

    python -m catalake.demo.generate [LANDING_DIR] [--days N] [--rides N]

Each day folder gets structured CloudEvents (JSON lines), Kafka records in `kcat -J` form
(binary mode, `ce_` headers), MQTT 5 records (CloudEvents attributes as user properties, gzip),
a CloudEvents batch array (the second day's Kafka records as a Kafka-source Parquet file,
demo/writers.py), a `_SUCCESS` marker, and a few records that must dead-letter
(malformed JSON, an unknown event type, a payload violating its schema). The benchmarks use the
same generator with larger counts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import random
import uuid
from pathlib import Path

from . import writers as formats

CITIES = {"amsterdam": ["AMS-001", "AMS-002", "AMS-003"], "lyon": ["LYS-010", "LYS-011"]}
SOURCE = "https://api.bikeshare.example/cities/{city}/stations/{station}"


def _ce(rng: random.Random, type_: str, source: str, subject: str | None, time: dt.datetime, data: dict, **ext) -> dict:
    event = {
        "specversion": "1.0",
        "id": str(uuid.UUID(int=rng.getrandbits(128))),
        "source": source,
        "type": type_,
        "time": time.isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": data,
    }
    if subject:
        event["subject"] = subject
    event.update(ext)
    return event


def _kcat(topic: str, partition: int, offset: int, key: str, event: dict) -> dict:
    """A CloudEvent in Kafka binary mode, as `kcat -J` prints it."""
    headers = []
    for name, value in event.items():
        if name not in ("data", "datacontenttype"):
            headers += [f"ce_{name}", str(value)]
    headers += ["content-type", event.get("datacontenttype", "application/json")]
    ts = int(dt.datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp() * 1000)
    return {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "tstype": "create",
        "ts": ts,
        "broker": 1,
        "headers": headers,
        "key": key,
        "payload": json.dumps(event["data"], separators=(",", ":")),
    }


def _mqtt(topic: str, event: dict, retain: bool) -> dict:
    """A CloudEvent in MQTT 5 binary mode: attributes as user properties."""
    props = [{"name": k, "value": str(v)} for k, v in event.items() if k not in ("data", "datacontenttype")]
    return {
        "protocol": "MQTT/5.0",
        "topic_name": topic,
        "qos": 1,
        "retain": retain,
        "content_type": "application/json",
        "user_properties": props,
        "payload": event["data"],
    }


def ride_id_of(day: dt.date, i: int, rides: int) -> str:
    """Ride `i` of a day of `rides`: the day (its ordinal's last three digits) then the ride's
    number, as wide as the day's rides need (three digits up to 1,000 rides, as the schema's
    `^R-[0-9]{6,}$` allows), so that ids are unique across any 1,000 consecutive days."""
    return f"R-{day.toordinal() % 1000:03d}{i:0{max(3, len(str(rides - 1)))}d}"


def day_records(day: dt.date, rides: int, seed: int = 7) -> dict[str, list]:
    """The records of one day, by file name."""
    rng = random.Random(f"{seed}-{day.isoformat()}")
    start = dt.datetime.combine(day, dt.time(6, 0), tzinfo=dt.timezone.utc)
    files: dict[str, list] = {"rides-http.jsonl": [], "rides-kafka.jsonl": [], "docks-mqtt.jsonl.gz": [], "battery-batch.json": []}
    offset = day.toordinal() * 1000
    for i in range(rides):
        city, ride_id = rng.choice(sorted(CITIES)), ride_id_of(day, i, rides)
        started, ended, paid = _ride(rng, start, city, ride_id)
        if i % 2 == 0:  # half the rides arrive through Kafka, half through the HTTP collector
            key = f"{city}/{ride_id}"
            files["rides-kafka.jsonl"] += [_kcat("rides", i % 3, offset + 2 * i, key, started),
                                           _kcat("rides", i % 3, offset + 2 * i + 1, key, ended)]
        else:
            files["rides-http.jsonl"] += [started, ended]
        files["rides-http.jsonl"].append(paid)
    for city, stations in sorted(CITIES.items()):
        for station in stations:
            statuses, low = _station(rng, start, city, station)
            files["docks-mqtt.jsonl.gz"] += statuses
            files["battery-batch.json"].append(low)
    files["rides-http.jsonl"] += _dead_letters(rng, start)
    return files


def _ride(rng: random.Random, start: dt.datetime, city: str, ride_id: str) -> tuple[str, str, str]:
    """A ride's three events: started, ended, and its payment captured."""
    station, end_station = rng.choice(CITIES[city]), rng.choice(CITIES[city])
    bike_id = f"B-{rng.randint(1000, 9999)}"
    t0 = start + dt.timedelta(minutes=rng.randint(0, 900))
    t1 = t0 + dt.timedelta(minutes=rng.randint(3, 55))
    electric = rng.random() < 0.4
    started = _ce(
        rng, "bikeshare.rides.RideStarted", SOURCE.format(city=city, station=station), f"rides/{ride_id}", t0,
        {"ride_id": ride_id, "bike_id": bike_id, "station_id": station,
         "rider_id": str(uuid.UUID(int=rng.getrandbits(128))), "started_at": t0.isoformat(),
         "bike_type": "electric" if electric else "classic", **({"battery_pct": rng.randint(25, 100)} if electric else {})},
    )
    fare = round(1.0 + (t1 - t0).seconds / 60 * 0.15, 2)
    ended = _ce(
        rng, "bikeshare.rides.RideEnded", SOURCE.format(city=city, station=end_station), f"rides/{ride_id}", t1,
        {"ride_id": ride_id, "bike_id": bike_id, "station_id": end_station, "ended_at": t1.isoformat(),
         "distance_m": rng.randint(300, 9000), "fare": {"amount": fare, "currency": "EUR"}},
    )
    paid = _ce(
        rng, "bikeshare.payments.PaymentCaptured", "https://billing.bikeshare.example/payments", f"rides/{ride_id}",
        t1 + dt.timedelta(seconds=30),
        {"payment_id": f"P-{rng.getrandbits(32):08x}", "ride_id": ride_id, "amount": fare, "currency": "EUR",
         "method": rng.choice(["card", "wallet", "subscription"])},
    )
    return started, ended, paid


def _station(rng: random.Random, start: dt.datetime, city: str, station: str) -> tuple[list, str]:
    """A station's day: its dock status at three hours (MQTT), and one bike's low battery."""
    statuses = []
    for hour in (8, 12, 18):
        t = start.replace(hour=hour) + dt.timedelta(minutes=rng.randint(0, 9))
        status = _ce(
            rng, "bikeshare.docks.DockStatus", SOURCE.format(city=city, station=station), None, t,
            {"station_id": station, "docks_free": rng.randint(0, 20), "bikes_available": rng.randint(0, 20),
             "ebikes_available": rng.randint(0, 6), "reported_at": int(t.timestamp() * 1000),
             "state": rng.choice(["OPEN", "OPEN", "OPEN", "MAINTENANCE"])},
            firmware="4.2.1",
        )
        statuses.append(_mqtt(f"bikeshare/{city}/stations/{station}/status", status, True))
    bike = f"B-{rng.randint(1000, 9999)}"
    low = _ce(
        rng, "bikeshare.docks.BatteryLow", SOURCE.format(city=city, station=station), f"bikes/{bike}",
        start.replace(hour=20),
        {"bike_id": bike, "station_id": station, "battery_pct": rng.randint(3, 19), "threshold_pct": 20},
    )
    return statuses, low


def _dead_letters(rng: random.Random, start: dt.datetime) -> list[str]:
    """Records that must end in the dead-letter table, each for its own reason."""
    return [
        '{"specversion": "1.0", "id": "broken-1", "type": ',
        _ce(rng, "bikeshare.rides.RideTeleported", SOURCE.format(city="lyon", station="LYS-010"), None, start,
            {"ride_id": "R-000000"}),
        _ce(rng, "bikeshare.rides.RideEnded", SOURCE.format(city="lyon", station="LYS-011"), "rides/R-999999", start,
            {"ride_id": "R-999999", "bike_id": "B-0001", "station_id": "LYS-011", "ended_at": start.isoformat(),
             "distance_m": -5, "fare": {"amount": 1.0, "currency": "EUR"}}),
    ]


def write_day(root: Path, day: dt.date, rides: int, kafka_parquet: bool = False) -> int:
    """One day folder; `kafka_parquet`: the Kafka records as Spark's Kafka source writes them
    (Parquet, writers.py), as a Structured Streaming job dumping the topic would land them."""
    folder = root / day.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, records in day_records(day, rides).items():
        lines = [r if isinstance(r, str) else json.dumps(r, separators=(",", ":")) for r in records]
        count += len(lines)
        if kafka_parquet and name == "rides-kafka.jsonl":
            formats.write_kafka_parquet(records, folder / "rides-kafka.parquet")
        elif name.endswith(".json"):
            (folder / name).write_text(json.dumps(records, indent=1) + "\n")
        elif name.endswith(".gz"):
            # mtime=0 keeps the file byte-identical across regenerations
            with open(folder / name, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
                fh.write(("\n".join(lines) + "\n").encode())
        else:
            (folder / name).write_text("\n".join(lines) + "\n")
    (folder / "_SUCCESS").write_text("")
    return count


def write_layouts(day: dt.date, rides: int, out: Path) -> dict[str, Path]:
    """The same demo day once per landing layout and format (writers.py): layout -> landing root."""
    files = day_records(day, rides)
    write_day(out / "json", day, rides)
    lines = [formats.line(r) for records in files.values() for r in records]  # the batch's events one per line
    hive = out / "hive-zstd" / f"year={day.year}" / f"month={day.month:02d}" / f"day={day.day:02d}" / "hour=06"
    formats.write_zstd_lines(lines, hive / "events.jsonl.zst")
    formats.write_capture(day, files, out / "capture")
    topic = files["rides-kafka.jsonl"][0]["topic"]
    for partition in sorted({r["partition"] for r in files["rides-kafka.jsonl"]}):
        records = [r for r in files["rides-kafka.jsonl"] if r["partition"] == partition]
        folder = out / "connect-parquet" / "topics" / topic / f"year={day.year}" / f"month={day.month:02d}" / f"day={day.day:02d}"
        formats.write_kafka_parquet(records, folder / "hour=06" / f"{topic}+{partition}+{records[0]['offset']:010d}.parquet")
    return {"json": out / "json", "hive-zstd": out / "hive-zstd", "capture": out / "capture",
            "connect-parquet": out / "connect-parquet"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("landing", nargs="?", default=str(Path(__file__).parent / "landing"))
    parser.add_argument("--start", default="2026-11-20", help="first day (YYYY-MM-DD)")
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--rides", type=int, default=12, help="rides per day")
    parser.add_argument("--layouts", action="store_true",
                        help="write the first day once per landing layout and format (writers.py) under LANDING_DIR")
    args = parser.parse_args(argv)
    first = dt.date.fromisoformat(args.start)
    if args.layouts:
        for layout, root in write_layouts(first, args.rides, Path(args.landing)).items():
            print(f"{layout}: {root}")
        return
    for n in range(args.days):
        day = first + dt.timedelta(days=n)
        # the demo's second day lands its Kafka records as Parquet (make demo reads both)
        print(f"{day}: {write_day(Path(args.landing), day, args.rides, kafka_parquet=n == 1)} records")


if __name__ == "__main__":
    main()
