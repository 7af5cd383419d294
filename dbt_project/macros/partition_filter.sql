{# `where event_date = <partition>` when a run passes a partition and the model is incremental. #}
{% macro partition_filter(column='event_date') -%}
  {%- if is_incremental() and var('partition') -%}
    where {{ column }} = date '{{ var("partition") }}'
  {%- endif -%}
{%- endmacro %}
