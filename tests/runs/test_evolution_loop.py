"""The catalog evolution loop: unmatched records -> proposed definitions -> the catalog
takes them -> replay moves exactly those records; conserved, and a second replay moves nothing."""

import json

from dagster import AssetKey
from deltalake import DeltaTable

from catalake import cli
from catalake.platform.catalog import load_catalog
from catalake.platform.config import catalog_roots
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.runs.drift import candidates, deadletter_rows, generalize, infer_schema, proposals_document
from catalake.platform.runs.replay import replay_partition
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables
from support.evolution import DAY, KNOWN, classified_day


def test_generalize_and_infer_are_pure_rules():
    assert generalize(["https://x/sites/a", "https://x/sites/b"], set()) == "https://x/sites/{site}"
    assert generalize(["/a", "/a"], set()) == "/a"
    assert generalize(["/a/b", "/a"], set()) is None  # shapes differ: nothing declared
    schema = infer_schema([{"t": "2026-11-20T10:00:00Z", "k": "x", "n": 1}, {"t": "2026-11-21T10:00:00Z", "k": "x"}])
    assert schema["required"] == ["k", "t"] and schema["properties"]["t"]["format"] == "date-time"
    assert schema["properties"]["k"]["enum"] == ["x"] and schema["properties"]["n"] == {"type": "integer"}


def test_drift_proposals_match_once_added_and_replay_moves_exactly_those(spark, tmp_path, capsys, monkeypatch):
    catalog_dir, warehouse, store, tables, first = classified_day(spark, tmp_path)
    assert first.deadletter == {"no_match": 9, "malformed_json": 1} and first.records == 11

    # drift: two candidate definitions, as expected (the Dagster asset and the command line)
    drift = definitions(tmp_path, catalog_dir).resolve_implicit_global_asset_job_def().execute_in_process(
        partition_key=DAY.isoformat(), asset_selection=[AssetKey("catalog_drift")])
    (materialization,) = drift.asset_materializations_for_node("catalog_drift")
    assert materialization.metadata["proposed_definitions"].value == 2 and materialization.metadata["unmatched_records"].value == 9
    assert "shop.SiteOpened" in materialization.metadata["preview"].value
    found = candidates(deadletter_rows(warehouse, DAY))
    assert [(c.type, c.count) for c in found] == [("shop.SiteOpened", 6), ("shop.Refunded", 3)]
    proposals = tmp_path / "proposals.xreg.json"
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(warehouse))
    assert cli.main(["drift", "--date", DAY.isoformat(), "--out", str(proposals)]) == 0
    assert "| no_match | `shop.SiteOpened` | - | 6 |" in capsys.readouterr().out
    document = json.loads(proposals.read_text())
    assert document == proposals_document(found, DAY) and document["specversion"] == "1.0"
    messages = document["messagegroups"]["catalake.drift"]["messages"]
    assert messages["shop.SiteOpened"]["envelopemetadata"]["source"] == {"type": "uritemplate", "value": "https://shop.example/sites/{site}"}
    assert messages["shop.Refunded"]["envelopemetadata"]["source"] == {"value": "/refunds"}
    schemas = document["schemagroups"]["catalake.drift"]["schemas"]
    opened = schemas["shop.SiteOpened"]["versions"]["1"]["schema"]
    assert opened["required"] == ["kind", "opened_at", "site"] and opened["properties"]["kind"]["enum"] == ["kiosk", "store"]
    assert opened["properties"]["opened_at"]["format"] == "date-time"
    refunded = schemas["shop.Refunded"]["versions"]["1"]["schema"]
    assert refunded["required"] == ["amount", "currency"] and refunded["properties"]["amount"] == {"type": "number"}
    # `catalake catalog validate` accepts it, on its own and with the catalog
    assert cli.main(["catalog", "validate", str(proposals)]) == 0
    (catalog_dir / "proposals.xreg.json").write_text(proposals.read_text())
    assert cli.main(["catalog", "validate", str(catalog_dir)]) == 0

    # replay against the catalog with the proposals: exactly those records move
    catalog = load_catalog([catalog_dir])
    tables, _ = message_tables(catalog, catalog_roots([catalog_dir]))
    result = replay_partition(spark, store, tables, DAY)
    assert result.deadletters == 10
    assert result.moved == {"no_match -> messages/catalake_drift__shop_siteopened": 6,
                            "no_match -> messages/catalake_drift__shop_refunded": 3}
    assert result.conserved and result.counts["rows_stored"] == 11
    sites = DeltaTable(str(warehouse / "messages/catalake_drift__shop_siteopened")).to_pyarrow_table().to_pylist()
    assert sorted(r["site"] for r in sites) == [f"s{i}" for i in range(1, 7)]  # the placeholder column
    assert {r["source_line"] for r in sites} == set(range(1, 7))  # lineage kept
    dead = DeltaTable(str(warehouse / DEADLETTER_TABLE)).to_pyarrow_table().to_pylist()
    assert [(d["reason"], d["source_line"]) for d in dead] == [("malformed_json", 11)]
    ok, counts = conservation(store, tables, DAY, first.records)
    assert ok and counts["per_table"]["messages/shop__orderplaced"] == 1

    # a second replay, as the Dagster job, moves nothing and commits nothing
    versions = {n: DeltaTable(str(warehouse / n)).version() for n in (DEADLETTER_TABLE, "messages/catalake_drift__shop_refunded")}
    run = definitions(tmp_path, catalog_dir).resolve_job_def("replay_job").execute_in_process(partition_key=DAY.isoformat())
    (observation,) = [e.event_specific_data.asset_observation for e in run.all_events if e.event_type_value == "ASSET_OBSERVATION"]
    assert observation.metadata["moved_rows"].value == 0 and observation.metadata["replayed_dead_letters"].value == 1
    assert {n: DeltaTable(str(warehouse / n)).version() for n in versions} == versions


def definitions(tmp_path, catalog_dir):
    from catalake.component import build_definitions
    from catalake.platform.config import Settings

    return build_definitions(Settings(catalog=(catalog_dir,), landing=tmp_path / "landing", warehouse=tmp_path / "warehouse",
                                      spark_master="local[2]", start_date="2026-11-01"), analytics=False)


def test_a_schema_change_marks_only_its_asset_and_the_catalog_lists_it(spark, tmp_path):
    from dagster import AssetKey, DagsterInstance

    from catalake.component import build_definitions
    from catalake.platform.config import Settings

    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    other = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "shop.OrderShipped"}}}
    path = tmp_path / "catalog" / "shop.xreg.json"
    path.parent.mkdir()

    def load():
        return build_definitions(Settings(catalog=(path.parent,), landing=tmp_path / "landing", warehouse=tmp_path / "warehouse",
                                          spark_master="local[2]"))

    def write(schema):
        path.write_text(json.dumps({"messagegroups": {"shop": {"messages": {
            "OrderPlaced": {**KNOWN, "dataschema": schema}, "OrderShipped": other}}}}))
        return load()

    def versions(defs):
        graph = defs.resolve_asset_graph()
        return {k.to_user_string(): graph.get(k).code_version for k in defs.resolve_all_asset_keys() if k.path[0] == "messages"}

    instance = DagsterInstance.ephemeral()
    first = write(schema)
    assert first.resolve_job_def("catalake_job").execute_in_process(instance=instance).success
    # a load reads the state the catalog run wrote: the change is flagged, its assets shown as they were
    stale = write({**schema, "properties": {**schema["properties"], "note": {"type": "string"}}})
    assert versions(stale) == versions(first)
    assert stale.resolve_asset_graph().get(AssetKey("message_catalog")).description.startswith("**The catalog changed")
    assert stale.resolve_job_def("catalake_job").execute_in_process(instance=instance).success  # refreshes the state
    additive = load()  # the reload after it
    before, after = versions(first), versions(additive)
    assert set(before) == set(after) == {"messages/shop/OrderPlaced", "messages/shop/OrderShipped"}
    assert before["messages/shop/OrderShipped"] == after["messages/shop/OrderShipped"]
    assert before["messages/shop/OrderPlaced"] != after["messages/shop/OrderPlaced"] and None not in after.values()
    event = instance.get_latest_materialization_event(AssetKey("message_catalog"))
    changes = event.asset_materialization.metadata["definition_changes"].value
    assert changes == {"added": [], "changed": ["/messagegroups/shop/messages/OrderPlaced"], "removed": []}


def test_a_replay_stopped_while_it_commits_is_finished_by_the_next(spark, tmp_path, monkeypatch):
    """The tables were appended, then the process died before the dead-letter partition was
    replaced (no `finally` ran): the next replay rolls the journal forward; nothing is in two
    places, nothing is lost, and a partition run afterwards starts clean."""
    from catalake.platform.runs import replay as replay_module

    catalog_dir, warehouse, store, tables, first = classified_day(spark, tmp_path)
    (catalog_dir / "proposals.xreg.json").write_text(json.dumps(proposals_document(candidates(deadletter_rows(warehouse, DAY)), DAY)))
    tables, _ = message_tables(load_catalog([catalog_dir]), catalog_roots([catalog_dir]))

    class Killed(BaseException):
        pass

    real_commit, real_remove = store.commit_partition, store.remove_uncommitted
    with monkeypatch.context() as m:
        def die(name, *args, **kwargs):
            raise Killed(name)  # the dead-letter commit never happens
        m.setattr(store, "commit_partition", die)
        m.setattr(store, "remove_uncommitted", lambda *args, **kwargs: None)  # a killed process cleans nothing
        try:
            replay_partition(spark, store, tables, DAY)
        except Killed:
            pass
    assert store.commit_partition == real_commit and store.remove_uncommitted == real_remove
    assert replay_module.journal_of(store.location, DAY) is not None
    _, counts = conservation(store, tables, DAY, first.records)
    assert counts["rows_stored"] == first.records + 9  # the moved rows are in two places until recovery

    again = replay_partition(spark, store, tables, DAY)
    assert again.moved == {"no_match -> messages/catalake_drift__shop_siteopened": 6,
                           "no_match -> messages/catalake_drift__shop_refunded": 3}  # what the roll-forward moved
    assert replay_module.journal_of(store.location, DAY) is None
    ok, counts = conservation(store, tables, DAY, first.records)
    assert ok and counts["per_table"][DEADLETTER_TABLE] == 1
    assert counts["per_table"]["messages/catalake_drift__shop_siteopened"] == 6
    # and a partition run of the day afterwards gives the same tables
    rerun = classify_partition(spark, store, tables, tmp_path / "landing", DAY)
    assert rerun.deadletter == {"malformed_json": 1} and conservation(store, tables, DAY, rerun.records)[0]
