{{ config(
    materialized='incremental',
    incremental_strategy='delete+insert',
    unique_key=['event_date', 'expectation'],
) }}
-- Records dead-lettered for breaking a rule, per rule per day: the expectation ids of the
-- definitions' suites (`data.fare.amount:range`) and `<path>:type` for values of the wrong kind.
select
    event_date,
    expectation,
    count(*) as records,
    count(distinct event_type) as event_types
from (
    select event_date, event_type, unnest(expectations) as expectation
    from {{ source('catalake', 'deadletter') }}
    {{ partition_filter() }}
) as broken
group by event_date, expectation
