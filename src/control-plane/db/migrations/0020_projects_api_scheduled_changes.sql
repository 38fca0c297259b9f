-- Projects managed through the API (POST / DELETE /api/projects/) and PostHog's scheduled
-- changes of feature flags (/api/projects/<id>/scheduled_changes/).

-- A deleted project (DELETE /api/projects/<id>/): gone from the API and from every node (its
-- change-log entity is deleted); its rows stay until an operator purges them.
ALTER TABLE projects ADD COLUMN deleted_at timestamptz NULL;

-- A change to apply to a record at scheduled_at (UTC), once: PostHog's ScheduledChange. The
-- job queue wakes a worker at scheduled_at; the worker locks the row, applies the payload as
-- created_by_id and sets executed_at in one transaction. failure_reason holds PostHog's JSON
-- failure context; executed_at is also set once a failure is final.
CREATE TABLE scheduled_changes (
  id             bigserial PRIMARY KEY,
  project_id     bigint NOT NULL REFERENCES projects(id),
  record_id      text NOT NULL,
  model_name     text NOT NULL,
  payload        jsonb NOT NULL,
  scheduled_at   timestamptz NOT NULL,
  executed_at    timestamptz NULL,
  failure_reason text NULL,
  failure_count  integer NOT NULL DEFAULT 0,
  created_by_id  bigint REFERENCES users(id),
  timezone       text NOT NULL DEFAULT 'UTC',    -- the project's zone when the change was created, as PostHog records it
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scheduled_changes_project ON scheduled_changes (project_id, id);
CREATE INDEX scheduled_changes_due ON scheduled_changes (scheduled_at) WHERE executed_at IS NULL;
