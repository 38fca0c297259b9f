-- Experiment analysis over large event stores.
--
-- Person overrides (PostHog's person overrides): events keep the person uuid they were ingested
-- with; when that person is later merged into another, the pair is recorded here (chains are
-- flattened, so every old uuid points at the surviving person). Analysis reads an event's person
-- as COALESCE(override, events.person_id) instead of joining person_distinct_ids per event.
CREATE TABLE person_overrides (
  project_id            bigint NOT NULL REFERENCES projects(id),
  old_person_uuid       uuid NOT NULL,
  override_person_uuid  uuid NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, old_person_uuid)
);
CREATE INDEX person_overrides_target ON person_overrides (project_id, override_person_uuid);

-- Metric reads need (event, time, person) only: with person_id in the index, a count or a funnel
-- over millions of events is an index-only scan instead of a heap read of every event row.
CREATE INDEX events_project_event_time_person ON events (project_id, event, timestamp DESC) INCLUDE (person_id);
DROP INDEX events_project_event_time;

-- Experiment exposures, pre-aggregated by ingestion: one row per (flag key, person as ingested,
-- response) with the first and last `$feature_flag_called` time. An experiment whose exposures
-- all fall inside its window reads these ~1 row per person instead of every exposure event
-- (experiments/results/exposures.ts); merges apply through person_overrides at read time.
CREATE TABLE experiment_exposures (
  project_id   bigint NOT NULL REFERENCES projects(id),
  flag_key     text NOT NULL,
  person_uuid  uuid NOT NULL,
  variant      text NOT NULL,                 -- $feature_flag_response as text (->> semantics)
  first_ts     timestamptz NOT NULL,
  last_ts      timestamptz NOT NULL,
  PRIMARY KEY (project_id, flag_key, person_uuid, variant)
);
INSERT INTO experiment_exposures (project_id, flag_key, person_uuid, variant, first_ts, last_ts)
  SELECT project_id, left(properties->>'$feature_flag', 400), person_id, properties->>'$feature_flag_response', min(timestamp), max(timestamp)
  FROM events
  WHERE event = '$feature_flag_called' AND person_id IS NOT NULL
    AND properties->>'$feature_flag' IS NOT NULL AND properties->>'$feature_flag_response' IS NOT NULL
  GROUP BY 1, 2, 3, 4;
