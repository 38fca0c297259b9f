-- Compaction deletes superseded entries anywhere past the catch-up window,
-- including the oldest row, so min(revision) no longer tells which revisions were pruned. The
-- horizon records it: every revision <= pruned_through may be missing (change-log/retention.ts);
-- above it, every entity's newest entry is present (grpc/watch.ts decides tail vs snapshot on it).
CREATE TABLE change_log_horizon (
  id             boolean PRIMARY KEY DEFAULT true CHECK (id),
  pruned_through bigint NOT NULL
);
INSERT INTO change_log_horizon (pruned_through) SELECT coalesce(min(revision) - 1, 0) FROM change_log;
