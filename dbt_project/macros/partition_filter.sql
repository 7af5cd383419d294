{#
  The days a run builds, as (min_date, max_date), or none for every day. The Dagster step passes
  its partition range (one day, or a backfill's range) in the environment, CATALAKE_MIN_DATE and
  CATALAKE_MAX_DATE, read only while the models execute: a new range then leaves dbt's partial
  parsing alone, where a value passed with --vars makes dbt parse the whole project again. By
  hand, `dbt build --vars '{min_date: 2026-10-01, max_date: 2026-10-31}'` does the same.
#}
{% macro partition_range() -%}
  {%- set first = var('min_date', none) or (env_var('CATALAKE_MIN_DATE', '') if execute else '') -%}
  {%- set last = var('max_date', none) or (env_var('CATALAKE_MAX_DATE', '') if execute else '') -%}
  {{ return((first, last or first) if first else none) }}
{%- endmacro %}

{#
  `where <column> between <first> and <last>` when a run builds a range and the model is
  incremental: the source's partitions of the range, `before` days earlier and `after` days later
  (what a model that joins across midnight needs), are all it reads. DuckDB pushes the filter into
  the Delta source's scan (platform/warehouse/dbt_delta.py): the other days' files are not opened.
  A model built whole (its first build, or --full-refresh) reads every day.
#}
{% macro partition_filter(column='event_date', before=0, after=0) -%}
  {%- set days = partition_range() -%}
  {%- if is_incremental() and days -%}
    {%- set day = modules.datetime.date.fromisoformat -%}
    {%- set first = day(days[0]) - modules.datetime.timedelta(days=before) -%}
    {%- set last = day(days[1]) + modules.datetime.timedelta(days=after) -%}
    where {{ column }} between date '{{ first.isoformat() }}' and date '{{ last.isoformat() }}'
  {%- endif -%}
{%- endmacro %}
