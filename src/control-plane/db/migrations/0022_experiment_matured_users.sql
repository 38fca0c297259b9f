-- PostHog's experiment setting `only_count_matured_users` (its Experiment model field, default
-- false): the experiment's results count only the users whose conversion window (retention:
-- retention window) has fully elapsed. A query may still override it for one run.
ALTER TABLE experiments
  ADD COLUMN only_count_matured_users boolean NOT NULL DEFAULT false;
