/**
 * First start on an empty database: a default organization, project and user with an
 * all-scope personal API key. Values come from
 * SWITCHYARD_BOOTSTRAP_PERSONAL_API_KEY / SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY, else they are
 * generated and returned so the caller can print them once. Replicas starting together are
 * serialised by a transaction advisory lock; only the first creates anything.
 */
import crypto from 'node:crypto';
import type { Sql, Tx } from './db/connect.js';
import type { Config } from '../config.js';
import { appendChanges } from './change-log/store.js';
import { PROJECT_SETTING_KEYS, projectEntity, type ProjectEntityRow } from '../contract/entities.js';
import { hashPersonalApiKey, maskKey, newPersonalApiKey, newProjectApiKey } from './keys/tokens.js';
import { personalApiKeyEntity } from './keys/store.js';

const BOOTSTRAP_LOCK_KEY = 7_302_114_003;

/** What the bootstrap created; `generated*` are set only for values it generated (print them once). */
export interface BootstrapResult {
  created: boolean;
  organizationId: number;
  projectId: number;
  userId: number;
  projectApiKey: string;
  generatedPersonalApiKey: string | null;
  generatedProjectApiKey: string | null;
  /**
   * SWITCHYARD_BOOTSTRAP_PROJECT_API_KEY when it was set but not used: the data dir already had
   * its project, whose key stays (a project has one API key; changing it would break every SDK
   * already shipped with the old one). Reported loudly by the commands.
   */
  ignoredProjectApiKey: string | null;
}

/**
 * Creates the default tenancy when no organization exists; otherwise reports the existing
 * first project. When a bootstrap personal key is configured and not yet stored, it is added
 * to the first user (so changing the variable on a later start still grants access).
 */
export async function bootstrap(sql: Sql, config: Config): Promise<BootstrapResult> {
  return sql.begin(async (tx: Tx) => {
    await tx`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK_KEY})`;
    const [existing] = await tx<{ org: number; project: number; token: string; user_id: number }[]>`
      SELECT o.id AS org, p.id AS project, p.api_token AS token, u.id AS user_id
      FROM organizations o JOIN projects p ON p.organization_id = o.id JOIN users u ON u.organization_id = o.id
      ORDER BY o.id, p.id, u.id LIMIT 1`;
    if (existing) {
      if (config.bootstrapPersonalApiKey) {
        const secure = hashPersonalApiKey(config.bootstrapPersonalApiKey);
        const [has] = await tx`SELECT 1 FROM personal_api_keys WHERE secure_value = ${secure}`;
        if (!has) await insertKey(tx, existing.user_id, existing.org, config.bootstrapPersonalApiKey);
      }
      const ignored = config.bootstrapProjectApiKey !== null && config.bootstrapProjectApiKey !== existing.token ? config.bootstrapProjectApiKey : null;
      return { created: false, organizationId: existing.org, projectId: existing.project, userId: existing.user_id,
        projectApiKey: existing.token, generatedPersonalApiKey: null, generatedProjectApiKey: null, ignoredProjectApiKey: ignored };
    }
    const projectKey = config.bootstrapProjectApiKey ?? newProjectApiKey();
    const personalKey = config.bootstrapPersonalApiKey ?? newPersonalApiKey();
    const [org] = await tx<{ id: number; name: string }[]>`INSERT INTO organizations (name) VALUES ('Default organization') RETURNING id, name`;
    const [project] = await tx<ProjectEntityRow[]>`
      INSERT INTO projects (organization_id, name, api_token) VALUES (${org!.id}, 'Default project', ${projectKey})
      RETURNING id, organization_id, name, api_token, timezone, ${tx(PROJECT_SETTING_KEYS as string[])}`;
    const [user] = await tx<{ id: number }[]>`INSERT INTO users (organization_id, distinct_id, first_name, email)
      VALUES (${org!.id}, ${crypto.randomUUID()}, 'Admin', 'admin@switchyard.local') RETURNING id`;
    await tx`INSERT INTO group_type_mappings (project_id, group_type, group_type_index) VALUES (${project!.id}, 'organization', 0)`;
    await appendChanges(tx, [
      { projectId: null, kind: 'organization', entityId: String(org!.id), op: 'upsert',
        payload: { id: org!.id, name: org!.name, monthly_flag_requests_limit: null, quota_limited: false } },
      { projectId: project!.id, kind: 'project', entityId: String(project!.id), op: 'upsert', payload: projectEntity(project!) },
      { projectId: project!.id, kind: 'group_type_mapping', entityId: `${project!.id}:0`, op: 'upsert',
        payload: { project_id: project!.id, group_type: 'organization', group_type_index: 0 } },
    ]);
    await insertKey(tx, user!.id, org!.id, personalKey);
    return {
      created: true, organizationId: org!.id, projectId: project!.id, userId: user!.id, projectApiKey: projectKey,
      generatedPersonalApiKey: config.bootstrapPersonalApiKey ? null : personalKey,
      generatedProjectApiKey: config.bootstrapProjectApiKey ? null : projectKey,
      ignoredProjectApiKey: null,
    };
  }) as Promise<BootstrapResult>;
}

async function insertKey(tx: Tx, userId: number, orgId: number, value: string): Promise<void> {
  const id = crypto.randomUUID();
  const secure = hashPersonalApiKey(value);
  await tx`INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, scopes)
    VALUES (${id}, ${userId}, 'bootstrap', ${secure}, ${maskKey(value)}, ${['*']})`;
  await appendChanges(tx, [{ projectId: null, kind: 'personal_api_key', entityId: id, op: 'upsert',
    payload: personalApiKeyEntity({ id, organization_id: orgId, secure_value: secure, scopes: ['*'], scoped_teams: [] }) }]);
}
