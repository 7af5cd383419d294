{{ config(
    materialized='incremental',
    incremental_strategy='delete+insert',
    unique_key=['event_date', 'reason'],
) }}
-- Dead-lettered records per reason per day.
select
    event_date,
    reason,
    count(*) as records,
    count(distinct source_file) as files
from {{ source('catalake', 'deadletter') }}
{{ partition_filter() }}
group by event_date, reason
