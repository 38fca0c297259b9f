-- A per-person pre-aggregate of event times, kept by ingestion
-- (ingestion/person-event-times.ts), so an experiment funnel over 1 M exposed persons reads about
-- one index entry per person, step and month instead of probing the events index once per
-- person and step (experiments/results/metric-values.ts `summaryFunnel`).
--
-- One row per (project, event, UTC month, person): how many events (n), the first and last
-- timestamp, and every timestamp, sorted, while n <= 64 (NULL beyond: the funnel then probes
-- that month's events for the person, as before). Persons come from events.person_id as
-- ingested; personless events are not kept, nor `$feature_flag_called` (most of SDK traffic;
-- experiment_exposures pre-aggregates it, and a funnel step on it probes the events).
--
-- Partitioned by month exactly like `events` (migration 0015): person_event_times_old for
-- everything before 2020, then person_event_times_yYYYYmMM. Partitions are created and dropped
-- together with the events partition of the same month (ingestion/event-partitions.ts), so
-- retention drops whole tables here too.
--
-- The primary key INCLUDEs the times, so a funnel reads its rows index-only, in person order,
-- and merge-joins them with the exposed persons.
CREATE TABLE person_event_times (
  project_id  bigint NOT NULL,
  event       text NOT NULL,
  month       timestamptz NOT NULL,
  person_id   uuid NOT NULL,
  n           integer NOT NULL,
  first_ts    timestamptz NOT NULL,
  last_ts     timestamptz NOT NULL,
  times       timestamptz[],
  PRIMARY KEY (project_id, event, month, person_id) INCLUDE (n, first_ts, last_ts, times)
) PARTITION BY RANGE (month);

DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = 'events'::regclass LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF person_event_times %s',
      'person_event_times' || substr(r.name, length('events') + 1), r.bound);
  END LOOP;
END $$;

INSERT INTO person_event_times (project_id, event, month, person_id, n, first_ts, last_ts, times)
SELECT project_id, event, date_trunc('month', timestamp AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', person_id,
  count(*), min(timestamp), max(timestamp),
  CASE WHEN count(*) <= 64 THEN array_agg(timestamp ORDER BY timestamp) END
FROM events WHERE person_id IS NOT NULL AND event <> '$feature_flag_called'
GROUP BY 1, 2, 3, 4;
