-- Funnel steps look up "the earliest event E of person P at/after T" once per exposed person
-- (experiments/results/metric-values.ts): an index on (person, event, time) answers each with one
-- index probe. It replaces the unused (person, time) index, so ingestion maintains no more indexes.
CREATE INDEX events_project_person_event_time ON events (project_id, person_id, event, timestamp);
DROP INDEX events_project_person_time;
