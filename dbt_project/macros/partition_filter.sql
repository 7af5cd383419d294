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

{# `where <column> between <min_date> and <max_date>` when a run builds a range and the model is incremental. #}
{% macro partition_filter(column='event_date') -%}
  {%- set days = partition_range() -%}
  {%- if is_incremental() and days -%}
    where {{ column }} between date '{{ days[0] }}' and date '{{ days[1] }}'
  {%- endif -%}
{%- endmacro %}
