-- Dashboards and insights (PostHog `/dashboards/` and `/insights/`): a flag's
-- usage dashboard (F8) and its enriched insights (F9) are ordinary dashboards of TrendsQuery
-- insights, drawn from the event store by `POST /query/`.

CREATE TABLE dashboards (
  id             bigserial PRIMARY KEY,
  project_id     bigint NOT NULL REFERENCES projects(id),
  name           text,
  description    text NOT NULL DEFAULT '',
  pinned         boolean NOT NULL DEFAULT false,
  filters        jsonb NOT NULL DEFAULT '{}',
  creation_mode  text NOT NULL DEFAULT 'default',   -- default | template | duplicate
  tags           text[] NOT NULL DEFAULT '{}',
  deleted        boolean NOT NULL DEFAULT false,
  created_by_id  bigint REFERENCES users(id),
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_accessed_at timestamptz
);
CREATE INDEX dashboards_project ON dashboards (project_id, id) WHERE NOT deleted;

CREATE TABLE insights (
  id                  bigserial PRIMARY KEY,
  project_id          bigint NOT NULL REFERENCES projects(id),
  short_id            text NOT NULL,
  name                text,
  description         text NOT NULL DEFAULT '',
  query               jsonb,
  tags                text[] NOT NULL DEFAULT '{}',
  favorited           boolean NOT NULL DEFAULT false,
  is_sample           boolean NOT NULL DEFAULT false,
  deleted             boolean NOT NULL DEFAULT false,
  created_by_id       bigint REFERENCES users(id),
  created_at          timestamptz NOT NULL DEFAULT now(),
  last_modified_by_id bigint REFERENCES users(id),
  last_modified_at    timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, short_id)
);
CREATE INDEX insights_project ON insights (project_id, id) WHERE NOT deleted;

-- An insight on a dashboard. Layouts and colour are the tile's, not the insight's.
CREATE TABLE dashboard_tiles (
  id            bigserial PRIMARY KEY,
  dashboard_id  bigint NOT NULL REFERENCES dashboards(id),
  insight_id    bigint NOT NULL REFERENCES insights(id),
  layouts       jsonb NOT NULL DEFAULT '{}',
  color         text,
  deleted       boolean NOT NULL DEFAULT false,
  UNIQUE (dashboard_id, insight_id)
);
CREATE INDEX dashboard_tiles_insight ON dashboard_tiles (insight_id);
