-- Stored experiment timeseries carry the version of the computation rules that produced them
-- (src/control-plane/experiments/results/rules-version.ts). Rows and recalculations of another
-- version are stale: results read as absent, and a recalculation under way starts over, so an
-- upgrade that changes how results are computed never serves numbers of the old rules as current.
-- Rows written before this column existed are version 0.
ALTER TABLE experiment_timeseries_results
  ADD COLUMN rules_version integer NOT NULL DEFAULT 0;
ALTER TABLE experiment_timeseries_recalculations
  ADD COLUMN rules_version integer NOT NULL DEFAULT 0;
