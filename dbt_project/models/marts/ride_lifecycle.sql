{{ config(
    materialized='incremental',
    incremental_strategy='delete+insert',
    unique_key=['ride_id'],
) }}
-- One row per ride of the bike-share demo: RideStarted joined to RideEnded (whichever binding,
-- CloudEvents over HTTP or Kafka, carried them), with duration, distance and fare. Built over a
-- run's days: the rides started in them and on the day before (a ride that ended on the run's
-- first day), joined to the rides ended from that day to the day after the run (a ride started
-- on its last day), so a range built again, or before the days after it, leaves every ride as a
-- build of the whole history would. A ride that spans two midnights is joined only by a full build.
with started as (
    select data.ride_id, data.bike_id, data.started_at, data.bike_type, city, event_date
    from {{ source('messages', 'bikeshare_rides__ridestarted') }}
    {{ partition_filter(before=1) }}
    union all
    select data.ride_id, data.bike_id, data.started_at, data.bike_type, city, event_date
    from {{ source('messages', 'bikeshare_rides_kafka__ridestarted') }}
    {{ partition_filter(before=1) }}
),
ended as (
    select data.ride_id, data.ended_at, data.distance_m, data.fare.amount as fare_amount, data.fare.currency as fare_currency
    from {{ source('messages', 'bikeshare_rides__rideended') }}
    {{ partition_filter(before=1, after=1) }}
    union all
    select data.ride_id, data.ended_at, data.distance_m, data.fare.amount, data.fare.currency
    from {{ source('messages', 'bikeshare_rides_kafka__rideended') }}
    {{ partition_filter(before=1, after=1) }}
)
select
    s.ride_id,
    s.city,
    s.bike_id,
    s.bike_type,
    s.started_at,
    e.ended_at,
    date_diff('second', s.started_at, e.ended_at) as duration_s,
    e.distance_m,
    e.fare_amount,
    e.fare_currency,
    e.ride_id is not null as completed,
    s.event_date as started_date
from started as s
left join ended as e on e.ride_id = s.ride_id
