-- Events are partitioned by month of `timestamp` (UTC), so retention drops whole
-- partitions (DROP TABLE: no row deletes, no dead tuples, no vacuum debt) and time-bounded reads
-- (experiment windows, trends) touch only their months.
--
-- Partitions: events_old holds everything before 2020 (one partition, so old client timestamps
-- cannot create thousands of tables), then events_yYYYYmMM per month, created on demand before a
-- batch is inserted (ingestion/event-partitions.ts). There is no default partition: a row with no
-- partition fails its batch loudly instead of piling up where retention never reaches.
--
-- The primary key must contain the partition key: (project_id, uuid, timestamp). A redelivered
-- event carries the timestamp the node resolved once, so redelivery stays idempotent; the same
-- uuid sent again by a client with another timestamp is a new event (as in PostHog, whose dedup
-- keys include the timestamp).
ALTER TABLE events RENAME TO events_unpartitioned;
ALTER INDEX events_pkey RENAME TO events_unpartitioned_pkey;
ALTER INDEX events_flag_called RENAME TO events_unpartitioned_flag_called;
ALTER INDEX events_project_event_time_person RENAME TO events_unpartitioned_event_time_person;
ALTER INDEX events_project_person_event_time RENAME TO events_unpartitioned_person_event_time;

CREATE TABLE events (
  project_id   bigint NOT NULL,
  uuid         uuid NOT NULL,
  event        text NOT NULL,
  distinct_id  text NOT NULL,
  person_id    uuid,
  properties   jsonb NOT NULL DEFAULT '{}',
  timestamp    timestamptz NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, uuid, timestamp)
) PARTITION BY RANGE (timestamp);
CREATE INDEX events_flag_called ON events (project_id, left(properties->>'$feature_flag', 400), timestamp DESC)
  WHERE event = '$feature_flag_called';
CREATE INDEX events_project_event_time_person ON events (project_id, event, timestamp DESC) INCLUDE (person_id);
CREATE INDEX events_project_person_event_time ON events (project_id, person_id, event, timestamp);

CREATE TABLE events_old PARTITION OF events FOR VALUES FROM (MINVALUE) TO ('2020-01-01 00:00:00+00');

DO $$
DECLARE m timestamptz;
BEGIN
  FOR m IN SELECT DISTINCT date_trunc('month', timestamp AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
           FROM events_unpartitioned WHERE timestamp >= '2020-01-01 00:00:00+00' LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
      'events_y' || to_char(m AT TIME ZONE 'UTC', 'YYYY') || 'm' || to_char(m AT TIME ZONE 'UTC', 'MM'),
      m, (m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
  END LOOP;
END $$;

INSERT INTO events SELECT project_id, uuid, event, distinct_id, person_id, properties, timestamp, created_at FROM events_unpartitioned;
DROP TABLE events_unpartitioned;
