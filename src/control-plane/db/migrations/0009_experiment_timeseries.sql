-- Experiment timeseries (E8/E9; research/posthog-management-api.md §3.7, experiments.md §5):
-- recalculation requests (jobs run by pg-boss) and one cumulative result per day.

CREATE TABLE experiment_timeseries_recalculations (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id           bigint NOT NULL REFERENCES projects(id),
  experiment_id        bigint NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  metric               jsonb NOT NULL,
  metric_uuid          text NOT NULL,
  fingerprint          text NOT NULL,
  status               text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
  last_successful_date date,
  error                text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX experiment_timeseries_recalculations_open ON experiment_timeseries_recalculations (experiment_id, fingerprint)
  WHERE status IN ('pending', 'in_progress');

CREATE TABLE experiment_timeseries_results (
  experiment_id bigint NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  metric_uuid   text NOT NULL,
  fingerprint   text NOT NULL,
  day           date NOT NULL,                 -- the project-timezone day the cumulative result ends
  query_to      timestamptz NOT NULL,          -- 00:00 of the next day in the project timezone (capped at end_date)
  status        text NOT NULL CHECK (status IN ('completed', 'failed')),
  result        jsonb,
  error         text,
  computed_at   timestamptz NOT NULL DEFAULT now(),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (experiment_id, metric_uuid, fingerprint, day)
);
