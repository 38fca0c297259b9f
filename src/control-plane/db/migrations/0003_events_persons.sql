-- Event capture on the control plane: events, persons, groups, event definitions and
-- experience-continuity hash-key overrides (capture and ingestion).
-- Written by src/control-plane/ingestion/** and read by the event-definitions API.

-- Events, idempotent by uuid within a project: a redelivered batch inserts nothing and has
-- no further effect (ingestion/service.ts).
CREATE TABLE events (
  project_id   bigint NOT NULL REFERENCES projects(id),
  uuid         uuid NOT NULL,
  event        text NOT NULL,
  distinct_id  text NOT NULL,
  person_id    uuid,                            -- persons.uuid at ingestion time; null for personless events
  properties   jsonb NOT NULL DEFAULT '{}',
  timestamp    timestamptz NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, uuid)
);
-- Per-event queries by time (insights-like reads, definitions' volume backfills).
CREATE INDEX events_project_event_time ON events (project_id, event, timestamp DESC);
-- Per-flag usage: `$feature_flag_called` by flag key and time. The key is clipped to 400
-- characters (flag keys are at most 400) so a client sending a huge `$feature_flag` value cannot
-- exceed the btree entry limit and fail its batch; query with the same expression.
CREATE INDEX events_flag_called ON events (project_id, left(properties->>'$feature_flag', 400), timestamp DESC)
  WHERE event = '$feature_flag_called';
CREATE INDEX events_project_person_time ON events (project_id, person_id, timestamp DESC);

-- Persons (PostHog posthog_person): one row per person, many distinct ids.
CREATE TABLE persons (
  id            bigserial PRIMARY KEY,
  uuid          uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  project_id    bigint NOT NULL REFERENCES projects(id),
  properties    jsonb NOT NULL DEFAULT '{}',
  is_identified boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  version       integer NOT NULL DEFAULT 0
);
CREATE INDEX persons_project ON persons (project_id, id);

CREATE TABLE person_distinct_ids (
  project_id  bigint NOT NULL REFERENCES projects(id),
  distinct_id text NOT NULL,
  person_id   bigint NOT NULL REFERENCES persons(id) ON DELETE CASCADE,
  PRIMARY KEY (project_id, distinct_id)
);
CREATE INDEX person_distinct_ids_person ON person_distinct_ids (person_id);

-- Groups ($groupidentify): properties per (project, type index, key).
CREATE TABLE groups (
  project_id       bigint NOT NULL REFERENCES projects(id),
  group_type_index integer NOT NULL CHECK (group_type_index BETWEEN 0 AND 4),
  group_key        text NOT NULL,
  properties       jsonb NOT NULL DEFAULT '{}',
  created_at       timestamptz NOT NULL DEFAULT now(),
  version          integer NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, group_type_index, group_key)
);

-- Event definitions (research/posthog-management-api.md §4). created_at / last_seen_at come
-- from ingestion; the rest is edited through D3.
CREATE TABLE event_definitions (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id      bigint NOT NULL REFERENCES projects(id),
  name            text NOT NULL,
  description     text NOT NULL DEFAULT '',
  tags            text[] NOT NULL DEFAULT '{}',
  owner_id        bigint REFERENCES users(id) ON DELETE SET NULL,
  verified        boolean NOT NULL DEFAULT false,
  verified_by_id  bigint REFERENCES users(id) ON DELETE SET NULL,
  verified_at     timestamptz,
  hidden          boolean NOT NULL DEFAULT false,
  post_to_slack   boolean NOT NULL DEFAULT false,
  default_columns text[] NOT NULL DEFAULT '{}',
  created_at      timestamptz,
  last_seen_at    timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by_id   bigint REFERENCES users(id) ON DELETE SET NULL,
  UNIQUE (project_id, name)
);

-- Daily event counts per name: `volume_30_day` of a definition is the sum of the last 30 days,
-- computed on read (cheap: at most 30 rows per definition).
CREATE TABLE event_volume_daily (
  project_id bigint NOT NULL REFERENCES projects(id),
  event      text NOT NULL,
  day        date NOT NULL,
  count      bigint NOT NULL,
  PRIMARY KEY (project_id, event, day)
);

-- Experience continuity (research/posthog-flag-evaluation.md §2.6).
CREATE TABLE feature_flag_hash_key_overrides (
  project_id       bigint NOT NULL REFERENCES projects(id),
  person_id        bigint NOT NULL REFERENCES persons(id) ON DELETE CASCADE,
  feature_flag_key text NOT NULL,
  hash_key         text NOT NULL,
  PRIMARY KEY (project_id, person_id, feature_flag_key)
);
CREATE INDEX hash_key_overrides_person ON feature_flag_hash_key_overrides (person_id);

-- Static cohort membership (PostHog posthog_cohortpeople); moved on person merges.
CREATE TABLE cohort_people (
  cohort_id bigint NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
  person_id bigint NOT NULL REFERENCES persons(id) ON DELETE CASCADE,
  PRIMARY KEY (cohort_id, person_id)
);
CREATE INDEX cohort_people_person ON cohort_people (person_id);
