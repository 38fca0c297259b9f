/**
 * Finding one person of a project by the id a route was given, as PostHog's PersonViewSet does
 * (`safely_get_object`): the numeric `id` or the `uuid`. Also the distinct-id ordering PostHog
 * shows (`is_anonymous_id`: ids shaped like `xxxx-xxxx-xxxx-xxxx-xxxx` in lower-case letters and
 * digits, which its SDKs generate for anonymous users, sort after the others).
 */
import type { Handle } from '../db/connect.js';
import { errors } from '../../errors.js';

/** A persons row as the person routes read it. */
export interface PersonRow {
  id: number;
  uuid: string;
  project_id: number;
  properties: Record<string, unknown>;
  is_identified: boolean;
  created_at: Date;
}

/** PostHog's ANONYMOUS_REGEX (posthog/utils.py `is_anonymous_id`), as a Postgres regular expression. */
export const ANONYMOUS_ID_SQL_RE = '^([a-z0-9]+-){4}([a-z0-9]+)$';

const NUMERIC = /^\d{1,15}$/;
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** Which column `raw` names a person by, or null when it is neither a numeric id nor a uuid. */
export function personKey(raw: string): { id: number } | { uuid: string } | null {
  if (NUMERIC.test(raw)) return { id: Number(raw) };
  if (UUID.test(raw)) return { uuid: raw.toLowerCase() };
  return null;
}

/**
 * The person `raw` (numeric id or uuid) names in `projectId`, or null when there is none
 * (another project's person is none). `forUpdate` locks the row until the transaction ends.
 * @throws ApiError 400 when `raw` is neither (PostHog's message, pointing to `?distinct_id=`).
 */
export async function findPerson(h: Handle, projectId: number, raw: string, forUpdate = false): Promise<PersonRow | null> {
  const key = personKey(raw);
  if (!key) {
    throw errors.validation(`The ID provided does not look like a personID. If you are using a distinctId, please use /persons?distinct_id=${raw} instead.`);
  }
  const where = 'id' in key ? h`id = ${key.id}` : h`uuid = ${key.uuid}::uuid`;
  const [row] = await h<PersonRow[]>`
    SELECT id, uuid::text AS uuid, project_id, properties, is_identified, created_at FROM persons
    WHERE project_id = ${projectId} AND ${where} ${forUpdate ? h`FOR UPDATE` : h``}`;
  return row ?? null;
}

/** A person's distinct ids in PostHog's display order (identified-looking ids first, then by text). */
export async function distinctIdsOf(h: Handle, projectId: number, personId: number): Promise<string[]> {
  const rows = await h<{ distinct_id: string }[]>`
    SELECT distinct_id FROM person_distinct_ids WHERE project_id = ${projectId} AND person_id = ${personId}
    ORDER BY distinct_id ~ ${ANONYMOUS_ID_SQL_RE}, distinct_id`;
  return rows.map((r) => r.distinct_id);
}

/**
 * Uuids events of this person may carry: its own, and those of persons merged into it since their
 * events were ingested (person_overrides; events keep the person they were ingested with).
 */
export async function eventPersonUuids(h: Handle, projectId: number, uuid: string): Promise<string[]> {
  const rows = await h<{ u: string }[]>`
    SELECT old_person_uuid::text AS u FROM person_overrides WHERE project_id = ${projectId} AND override_person_uuid = ${uuid}::uuid`;
  return [uuid, ...rows.map((r) => r.u)];
}
