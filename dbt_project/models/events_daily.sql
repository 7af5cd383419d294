{{ config(
    materialized='incremental',
    incremental_strategy='delete+insert',
    unique_key=['event_date', 'message_xid'],
) }}
-- Records per message definition per day, from every per-message table.
{% for message in catalake_messages() %}
select
    {{ message.xid_sql }} as message_xid,
    {{ message.table_sql }} as table_name,
    event_date,
    count(*) as records
from {{ source('messages', message.table) }}
{{ partition_filter() }}
group by event_date
{% if not loop.last %}union all{% endif %}
{% endfor %}
