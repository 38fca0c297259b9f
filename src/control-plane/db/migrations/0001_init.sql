-- Tenancy, keys, feature flags, cohorts, activity log and the change log.

CREATE TABLE organizations (
  id            bigserial PRIMARY KEY,
  uuid          uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  name          text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id              bigserial PRIMARY KEY,
  organization_id bigint NOT NULL REFERENCES organizations(id),
  uuid            uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  name            text NOT NULL,
  api_token       text NOT NULL UNIQUE,          -- project API key, phc_…
  timezone        text NOT NULL DEFAULT 'UTC',
  created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id                   bigserial PRIMARY KEY,
  uuid                 uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
  organization_id      bigint NOT NULL REFERENCES organizations(id),
  distinct_id          text NOT NULL UNIQUE,
  first_name           text NOT NULL DEFAULT '',
  last_name            text NOT NULL DEFAULT '',
  email                text NOT NULL UNIQUE,
  is_email_verified    boolean NOT NULL DEFAULT false,
  hedgehog_config      jsonb,
  role_at_organization text,
  is_active            boolean NOT NULL DEFAULT true,
  created_at           timestamptz NOT NULL DEFAULT now()
);

-- Personal API keys: only the sha256 of the value is stored (research §5.1).
CREATE TABLE personal_api_keys (
  id            text PRIMARY KEY,
  user_id       bigint NOT NULL REFERENCES users(id),
  label         text NOT NULL DEFAULT '',
  secure_value  text NOT NULL UNIQUE,           -- 'sha256$' || hex digest of the full key
  mask_value    text NOT NULL,
  scopes        text[] NOT NULL,
  scoped_teams  bigint[] NOT NULL DEFAULT '{}', -- empty: every project of the user's organization
  scoped_organizations uuid[] NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);

-- Group types per project: index 0..4 → name (group_type_mapping of the local-evaluation feed).
CREATE TABLE group_type_mappings (
  project_id       bigint NOT NULL REFERENCES projects(id),
  group_type       text NOT NULL,
  group_type_index integer NOT NULL CHECK (group_type_index BETWEEN 0 AND 4),
  PRIMARY KEY (project_id, group_type_index),
  UNIQUE (project_id, group_type)
);

CREATE TABLE cohorts (
  id            bigserial PRIMARY KEY,
  project_id    bigint NOT NULL REFERENCES projects(id),
  name          text NOT NULL DEFAULT '',
  description   text NOT NULL DEFAULT '',
  filters       jsonb NOT NULL DEFAULT '{}',     -- {properties: {type: AND|OR, values: [...]}}
  is_static     boolean NOT NULL DEFAULT false,
  deleted       boolean NOT NULL DEFAULT false,
  created_by_id bigint REFERENCES users(id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cohorts_project ON cohorts (project_id) WHERE NOT deleted;

CREATE TABLE feature_flags (
  id                           bigserial PRIMARY KEY,
  project_id                   bigint NOT NULL REFERENCES projects(id),
  key                          text NOT NULL,
  name                         text NOT NULL DEFAULT '',
  filters                      jsonb NOT NULL DEFAULT '{}',
  deleted                      boolean NOT NULL DEFAULT false,
  active                       boolean NOT NULL DEFAULT true,
  version                      integer NOT NULL DEFAULT 1,
  created_by_id                bigint REFERENCES users(id),
  last_modified_by_id          bigint REFERENCES users(id),
  created_at                   timestamptz NOT NULL DEFAULT now(),
  updated_at                   timestamptz NOT NULL DEFAULT now(),
  ensure_experience_continuity boolean DEFAULT false,
  rollback_conditions          jsonb,
  performed_rollback           boolean,
  tags                         text[] NOT NULL DEFAULT '{}',
  evaluation_tags              text[] NOT NULL DEFAULT '{}',
  analytics_dashboards         bigint[] NOT NULL DEFAULT '{}',
  usage_dashboard              bigint,
  has_enriched_analytics       boolean DEFAULT false,
  creation_context             text NOT NULL DEFAULT 'feature_flags',
  is_remote_configuration      boolean NOT NULL DEFAULT false,
  has_encrypted_payloads       boolean NOT NULL DEFAULT false,
  evaluation_runtime           text NOT NULL DEFAULT 'all',
  bucketing_identifier         text,
  last_called_at               timestamptz,
  create_in_folder             text
);
-- Keys are unique among live flags only; soft-deleted keys can be reused (research §1.2).
CREATE UNIQUE INDEX feature_flags_live_key ON feature_flags (project_id, key) WHERE NOT deleted;
CREATE INDEX feature_flags_project_created ON feature_flags (project_id, created_at DESC);

-- Activity log: one row per create / update / delete / restore, written in the change's
-- transaction (research §2.1 entry shape).
CREATE TABLE activity_log (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id  bigint NOT NULL REFERENCES projects(id),
  user_id     bigint REFERENCES users(id),
  is_system   boolean NOT NULL DEFAULT false,
  activity    text NOT NULL,
  scope       text NOT NULL,
  item_id     text NOT NULL,
  detail      jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX activity_log_item ON activity_log (project_id, scope, item_id, created_at DESC);
CREATE INDEX activity_log_scope ON activity_log (project_id, scope, created_at DESC);

-- Change log: every definition change as the entity's new state, in revision order. Writers
-- take a transaction advisory lock before appending (see change-log/store.ts) so that revisions
-- become visible in increasing order: a reader tailing `revision > n` never skips one.
CREATE TABLE change_log (
  revision    bigserial PRIMARY KEY,
  project_id  bigint,                         -- null for cluster-wide entities
  kind        text NOT NULL,                  -- project | feature_flag | cohort | group_type_mapping | personal_api_key | ...
  entity_id   text NOT NULL,
  op          text NOT NULL CHECK (op IN ('upsert', 'delete')),
  payload     jsonb,                          -- new state (upsert) or null (delete)
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX change_log_entity ON change_log (kind, entity_id, revision DESC);
