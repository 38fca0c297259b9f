-- Experiment analysis reads each partition's exposed persons from
-- experiment_exposures in key order (experiments/results/exposures.ts). With the times in the
-- key's index the read is index-only wherever the table is vacuumed, instead of one heap visit
-- per person in random order (bench/experiments.ts, 500,000 persons a partition: 0.86 s → 0.45 s
-- for the exposures, 0.20 s → 0.13 s for the window check). Ingestion's ON CONFLICT still names
-- the same four columns.
ALTER TABLE experiment_exposures
  DROP CONSTRAINT experiment_exposures_pkey,
  ADD PRIMARY KEY (project_id, flag_key, person_uuid, variant) INCLUDE (first_ts, last_ts);
