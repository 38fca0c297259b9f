-- The events list (GET /api/projects/:id/events/) reads a project's events newest first and pages
-- on (timestamp, uuid): a page after the cursor (t, u) is `(timestamp, uuid) < (t, u)` in
-- descending order. With this index each page is one backward range scan per month partition
-- (merged in time order, stopped at the page size), so page N costs what page 1 costs whatever
-- the project's event count; without it Postgres reads and sorts the project's events.
-- Ascending columns serve the descending order by scanning backwards. Created on the partitioned
-- parent, so every existing and future month partition gets it (event-partitions.ts).
-- Cost: one more index entry per ingested event (project_id, timestamp, uuid: 40 bytes).
CREATE INDEX events_project_time_uuid ON events (project_id, timestamp, uuid);
