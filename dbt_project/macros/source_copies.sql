{#
  Releases before catalake's own Delta plugin copied every source into the DuckDB file, in the
  schemas `messages` and `catalake`; the sources are now views of dbt's process only
  (profiles.yml). Each build drops those copies, if a file made by such a release still has them.
#}
{% macro drop_source_copies() -%}
  {%- for schema in ['messages', 'catalake'] -%}
    drop schema if exists {{ target.database }}.{{ schema }} cascade;
  {% endfor -%}
{%- endmacro %}
