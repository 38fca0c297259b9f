-- The team's property matching (PostHog's TeamFeatureFlagsConfig field of the
-- same name): 1 legacy, 2 explicit boolean equality. Sent in the local-evaluation feed and used
-- by the nodes' evaluator.
ALTER TABLE projects
  ADD COLUMN property_matching_version smallint NOT NULL DEFAULT 1 CHECK (property_matching_version IN (1, 2));
