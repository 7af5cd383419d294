-- Every message definition: when it was first and last seen, its records in the 7 days up to the
-- last day the run builds (or today), and whether it was ever seen.
{% set days = partition_range() %}
{% set as_of = "date '" ~ days[1] ~ "'" if days else 'current_date' %}
with seen as (
    select
        message_xid,
        min(event_date) as first_seen,
        max(event_date) as last_seen,
        cast(sum(records) as bigint) as records_total,
        cast(sum(case when event_date > {{ as_of }} - interval 7 day and event_date <= {{ as_of }} then records else 0 end) as bigint)
            as records_last_7_days
    from {{ ref('events_daily') }}
    where records > 0
    group by message_xid
)
select
    c.xid as message_xid,
    c.group_id,
    c.message_id,
    c.table_name,
    c.protocol,
    seen.first_seen,
    seen.last_seen,
    coalesce(seen.records_total, 0) as records_total,
    coalesce(seen.records_last_7_days, 0) as records_last_7_days,
    seen.message_xid is null as never_seen
from {{ source('catalake', 'catalog_messages') }} as c
left join seen on seen.message_xid = c.xid
