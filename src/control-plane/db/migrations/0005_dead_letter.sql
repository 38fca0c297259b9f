-- Captured events that can never be ingested: kept with the reason instead of
-- failing their batch forever. `payload` is the event as the node sent it (msgpack bytes);
-- the other columns are clipped copies for finding it, and may be null when unreadable.
CREATE TABLE dead_letter_events (
  id           bigserial PRIMARY KEY,
  project_id   bigint,
  uuid         text,
  event        text,
  distinct_id  text,
  payload      bytea NOT NULL,
  reason       text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letter_events_created ON dead_letter_events (created_at);
