"""`dg scaffold defs catalake.CatalakeComponent <name>`: a `defs.yaml` with every attribute explained."""

from dagster.components import Scaffolder, ScaffoldRequest

DEFS_YAML = """\
type: catalake.CatalakeComponent

attributes:
  # every asset key of this catalog starts with it; jobs, schedules, sensors and resources are
  # named <key_prefix>_<name> (e.g. {name}_events_job)
  key_prefix: {name}
  # the xRegistry catalog: a file or a folder, or a list of them (left out: CATALAKE_CATALOG, the demo)
  # catalog: "{{{{ project_root }}}}/catalogs/{name}"
  # where the producers' files land, and how a day's files are found below it
  # landing: s3://landing-bucket/{name}
  # landing_layout: day
  # where the Delta tables are written: a folder or a URI
  warehouse: "{{{{ project_root }}}}/warehouse/{name}"
  # group_name: {name}
  # owners: ["team:{name}"]
  # start_date: "2026-01-01"
  # spark_conf: {{spark.sql.shuffle.partitions: "8"}}
  # where the state every load reads is kept (`dg utils refresh-defs-state` writes it): LOCAL_FILESYSTEM,
  # VERSIONED_STATE_STORAGE (the instance's defs_state_storage) or LEGACY_CODE_SERVER_SNAPSHOTS
  # defs_state: {{management_type: LOCAL_FILESYSTEM, refresh_if_dev: true}}
"""


class CatalakeScaffolder(Scaffolder):
    """`dg scaffold defs catalake.CatalakeComponent <name>`: a defs.yaml that loads as it is (the
    environment's catalog and landing, a warehouse of its own) with every attribute explained."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        name = "_".join(p for p in request.target_path.name.replace("-", "_").split("_") if p) or "catalake"
        (request.target_path / "defs.yaml").write_text(DEFS_YAML.format(name=name))
