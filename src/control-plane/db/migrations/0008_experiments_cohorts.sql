-- Experiments, holdouts, saved metrics and the cohorts API (spec/API.md §2.2, §2.5,
-- §2.6, §4.1; research/posthog-management-api.md §3).

-- Cohorts as PostHog's CohortSerializer shows them: calculation state and the member count.
ALTER TABLE cohorts
  ADD COLUMN is_calculating     boolean NOT NULL DEFAULT false,
  ADD COLUMN last_calculation   timestamptz,
  ADD COLUMN errors_calculating integer NOT NULL DEFAULT 0,
  ADD COLUMN count              integer,
  ADD COLUMN groups             jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN query              jsonb,
  ADD COLUMN create_in_folder   text;
CREATE INDEX cohorts_project_created ON cohorts (project_id, id DESC) WHERE NOT deleted;

-- Holdouts: a share of users kept out of every experiment that uses the holdout (§3.10).
CREATE TABLE experiment_holdouts (
  id            bigserial PRIMARY KEY,
  project_id    bigint NOT NULL REFERENCES projects(id),
  name          text NOT NULL,
  description   text,
  filters       jsonb NOT NULL DEFAULT '[]',   -- [{properties: [], rollout_percentage, variant: "holdout-<id>"}]
  created_by_id bigint REFERENCES users(id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX experiment_holdouts_project ON experiment_holdouts (project_id, created_at DESC);

-- Saved (shared) metrics (§3.11): an ExperimentMetric reused across experiments.
CREATE TABLE experiment_saved_metrics (
  id            bigserial PRIMARY KEY,
  project_id    bigint NOT NULL REFERENCES projects(id),
  name          text NOT NULL,
  description   text,
  query         jsonb NOT NULL,
  tags          text[] NOT NULL DEFAULT '{}',
  created_by_id bigint REFERENCES users(id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX experiment_saved_metrics_name ON experiment_saved_metrics (project_id, lower(name));

-- Experiments (§3.1). Lifecycle is derived: draft (no start_date), running, stopped (end_date).
CREATE TABLE experiments (
  id                              bigserial PRIMARY KEY,
  project_id                      bigint NOT NULL REFERENCES projects(id),
  name                            text NOT NULL,
  description                     text,
  start_date                      timestamptz,
  end_date                        timestamptz,
  feature_flag_id                 bigint NOT NULL REFERENCES feature_flags(id),
  holdout_id                      bigint REFERENCES experiment_holdouts(id) ON DELETE SET NULL,
  exposure_cohort_id              bigint REFERENCES cohorts(id) ON DELETE SET NULL,
  parameters                      jsonb,
  secondary_metrics               jsonb NOT NULL DEFAULT '[]',
  filters                         jsonb NOT NULL DEFAULT '{}',
  archived                        boolean NOT NULL DEFAULT false,
  deleted                         boolean NOT NULL DEFAULT false,
  type                            text NOT NULL DEFAULT 'product',
  exposure_criteria               jsonb,
  metrics                         jsonb NOT NULL DEFAULT '[]',
  metrics_secondary               jsonb NOT NULL DEFAULT '[]',
  stats_config                    jsonb,
  create_in_folder                text,
  conclusion                      text,
  conclusion_comment              text,
  primary_metrics_ordered_uuids   jsonb,
  secondary_metrics_ordered_uuids jsonb,
  created_by_id                   bigint REFERENCES users(id),
  created_at                      timestamptz NOT NULL DEFAULT now(),
  updated_at                      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX experiments_project ON experiments (project_id, created_at DESC) WHERE NOT deleted;
CREATE INDEX experiments_flag ON experiments (feature_flag_id);
CREATE INDEX experiments_holdout ON experiments (holdout_id) WHERE holdout_id IS NOT NULL;

-- Saved-metric links of an experiment (§3.11 "Links").
CREATE TABLE experiment_to_saved_metric (
  id              bigserial PRIMARY KEY,
  experiment_id   bigint NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  saved_metric_id bigint NOT NULL REFERENCES experiment_saved_metrics(id) ON DELETE CASCADE,
  metadata        jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX experiment_to_saved_metric_experiment ON experiment_to_saved_metric (experiment_id);
CREATE INDEX experiment_to_saved_metric_metric ON experiment_to_saved_metric (saved_metric_id);
