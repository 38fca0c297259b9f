/**
 * Rules of the event-definitions resource (research/posthog-management-api.md §4, EE
 * serializer `ee/api/ee_event_definition.py`): the read shape, D3's writable fields and the
 * hidden/verified rules, D4's hard delete, D5's metrics. Every write runs in one transaction
 * with its activity entry (scope `EventDefinition`). Definitions carry no change-log entry:
 * evaluation nodes never read them.
 *
 * Decisions:
 * - `volume_30_day` is the number of events of that name ingested with a timestamp in the last
 *   30 UTC days (daily buckets kept by ingestion); `query_usage_30_day` is null in the record and
 *   0 in D5: Switchyard runs no queries to count.
 * - `is_action` false, `action_id` / `created_by` / `last_calculated_at` null, `is_calculating`
 *   false: Switchyard has no actions and no calculation jobs.
 */
import { pyType } from '../../json-shapes.js';
import { errors } from '../../errors.js';
import type { Sql } from '../db/connect.js';
import { writeActivity } from '../activity/store.js';
import { diffRecords } from '../activity/diff.js';
import { userBasic, type UserBasic } from '../users/serialize.js';
import type { DefinitionListQuery } from './list-query.js';
import {
  deleteDefinition, getDefinition, getDefinitionByName, listDefinitions, updateDefinition, userInOrganization,
  type DefinitionRow, type DefinitionUpdate,
} from './store.js';

/** Activity-log scope. */
export const ACTIVITY_SCOPE = 'EventDefinition';

/** The EE serializer's read shape. */
export interface EventDefinition {
  id: string;
  name: string;
  owner: UserBasic | null;
  description: string;
  tags: string[];
  created_at: string | null;
  updated_at: string;
  updated_by: UserBasic | null;
  last_seen_at: string | null;
  last_updated_at: string;
  verified: boolean;
  verified_at: string | null;
  verified_by: UserBasic | null;
  hidden: boolean;
  is_action: false;
  action_id: null;
  is_calculating: false;
  last_calculated_at: null;
  created_by: null;
  post_to_slack: boolean;
  default_columns: string[];
  volume_30_day: number;
  query_usage_30_day: null;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** Row → read shape. */
export function serializeDefinition(r: DefinitionRow): EventDefinition {
  return {
    id: r.id,
    name: r.name,
    owner: userBasic(r.owner),
    description: r.description,
    tags: r.tags,
    created_at: iso(r.created_at),
    updated_at: r.updated_at.toISOString(),
    updated_by: userBasic(r.updated_by),
    last_seen_at: iso(r.last_seen_at),
    last_updated_at: r.updated_at.toISOString(),
    verified: r.verified,
    verified_at: iso(r.verified_at),
    verified_by: userBasic(r.verified_by),
    hidden: r.hidden,
    is_action: false,
    action_id: null,
    is_calculating: false,
    last_calculated_at: null,
    created_by: null,
    post_to_slack: r.post_to_slack,
    default_columns: r.default_columns,
    volume_30_day: Number(r.volume_30_day),
    query_usage_30_day: null,
  };
}

/** The fields the activity diff compares (user references by id). */
function auditable(r: DefinitionRow): Record<string, unknown> {
  return {
    description: r.description, tags: r.tags, owner: r.owner_id, verified: r.verified, hidden: r.hidden,
    post_to_slack: r.post_to_slack, default_columns: r.default_columns,
  };
}

const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * Parses an id path segment. @throws ApiError 404 "Event definition not found." for a non-UUID.
 * Hyphen-less UUIDs are accepted like Python's `uuid.UUID`.
 */
export function parseDefinitionId(raw: string): string {
  const s = raw.trim();
  if (!UUID_RE.test(s)) throw errors.notFound('Event definition not found.');
  const hex = s.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function parseBool(v: unknown, attr: string): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (['true', 't', '1', 'yes', 'y', 'on'].includes(s)) return true;
    if (['false', 'f', '0', 'no', 'n', 'off'].includes(s)) return false;
  }
  if (v === 1) return true;
  if (v === 0) return false;
  throw errors.validation('Must be a valid boolean.', attr, 'invalid_input');
}

function parseStringList(v: unknown, attr: string): string[] {
  if (!Array.isArray(v)) throw errors.validation(`Expected a list of items but got type "${pyType(v)}".`, attr, 'not_a_list');
  return v.map((x, i) => {
    if (typeof x === 'string') return x;
    if (typeof x === 'number' || typeof x === 'boolean') return String(x);
    throw errors.validation('Not a valid string.', `${attr}__${i}`, 'invalid_input');
  });
}

/** Validated D3 body: the fields sent (undefined = not sent). */
interface ParsedUpdate {
  description?: string; tags?: string[]; owner?: number | null; verified?: boolean; hidden?: boolean;
  post_to_slack?: boolean; default_columns?: string[];
}

function parseUpdate(body: unknown): ParsedUpdate {
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  }
  const b = body as Record<string, unknown>;
  const out: ParsedUpdate = {};
  if ('description' in b) {
    if (b.description === null) throw errors.validation('This field may not be null.', 'description', 'null');
    if (typeof b.description !== 'string') throw errors.validation('Not a valid string.', 'description', 'invalid_input');
    out.description = b.description;
  }
  if ('tags' in b) {
    // TaggedItemSerializerMixin: trimmed, empty dropped, de-duplicated in order.
    out.tags = [...new Set(parseStringList(b.tags, 'tags').map((t) => t.trim()).filter((t) => t.length > 0))];
  }
  if ('owner' in b) {
    const o = b.owner;
    if (o === null) out.owner = null;
    else if (typeof o === 'number' && Number.isSafeInteger(o)) out.owner = o;
    else if (typeof o === 'string' && /^\d{1,15}$/.test(o)) out.owner = Number(o);
    else throw errors.validation(`Incorrect type. Expected pk value, received ${pyType(o)}.`, 'owner', 'incorrect_type');
  }
  if ('verified' in b) out.verified = parseBool(b.verified, 'verified');
  if ('hidden' in b) out.hidden = parseBool(b.hidden, 'hidden');
  if ('post_to_slack' in b) out.post_to_slack = parseBool(b.post_to_slack, 'post_to_slack');
  if ('default_columns' in b) out.default_columns = parseStringList(b.default_columns, 'default_columns');
  if (out.hidden === true && out.verified === true) throw errors.validation('An event cannot be both hidden and verified', null);
  return out;
}

/** The event-definitions service. */
export class EventDefinitionService {
  constructor(private readonly sql: Sql) {}

  /** D1: a page of definitions. */
  async list(projectId: number, q: DefinitionListQuery, limit: number, offset: number): Promise<{ count: number; results: EventDefinition[] }> {
    const { count, rows } = await listDefinitions(this.sql, projectId, q, limit, offset);
    return { count, results: rows.map(serializeDefinition) };
  }

  /** D2. @throws ApiError 404. */
  async get(projectId: number, rawId: string): Promise<EventDefinition> {
    const row = await getDefinition(this.sql, projectId, parseDefinitionId(rawId));
    if (!row) throw errors.notFound();
    return serializeDefinition(row);
  }

  /** `GET by_name?name=`. @throws ApiError 400 without `name`, 404 when unknown. */
  async getByName(projectId: number, name: string | null): Promise<EventDefinition> {
    if (name === null || name === '') throw errors.validation('This field is required.', 'name', 'required');
    const row = await getDefinitionByName(this.sql, projectId, name);
    if (!row) throw errors.notFound(`Event definition with name '${name}' not found`);
    return serializeDefinition(row);
  }

  /**
   * D3: applies the writable fields and PostHog's rules: `hidden: true` clears verification;
   * `verified: true` on an unverified definition records the caller and time and un-hides it
   * (re-verifying changes nothing); `verified: false` clears the verifier. Writes an activity
   * entry `changed` when something changed. @throws ApiError 400 / 404.
   */
  async update(projectId: number, organizationId: number, userId: number, rawId: string, body: unknown): Promise<EventDefinition> {
    const id = parseDefinitionId(rawId);
    const input = parseUpdate(body);
    if (input.owner !== undefined && input.owner !== null && !(await userInOrganization(this.sql, organizationId, input.owner))) {
      throw errors.validation(`Invalid pk "${input.owner}" - object does not exist.`, 'owner', 'does_not_exist');
    }
    return this.sql.begin(async (tx) => {
      const before = await getDefinition(tx, projectId, id, { forUpdate: true });
      if (!before) throw errors.notFound();
      const u: DefinitionUpdate = {
        description: input.description, tags: input.tags, owner_id: input.owner, post_to_slack: input.post_to_slack,
        default_columns: input.default_columns,
      };
      if (input.hidden === true) {
        Object.assign(u, { hidden: true, verified: false, verified_by_id: null, verified_at: null });
      } else {
        if (input.hidden === false) u.hidden = false;
        if (input.verified === true && !before.verified) {
          Object.assign(u, { verified: true, verified_by_id: userId, verified_at: new Date(), hidden: false });
        } else if (input.verified === false) {
          Object.assign(u, { verified: false, verified_by_id: null, verified_at: null });
        }
      }
      await updateDefinition(tx, id, userId, u);
      const after = (await getDefinition(tx, projectId, id))!;
      const changes = diffRecords(ACTIVITY_SCOPE, auditable(before), auditable(after));
      if (changes.length > 0) {
        await writeActivity(tx, { projectId, userId, activity: 'changed', scope: ACTIVITY_SCOPE, itemId: id, name: after.name, changes });
      }
      return serializeDefinition(after);
    }) as Promise<EventDefinition>;
  }

  /** D4: hard delete with an activity entry `deleted`. @throws ApiError 404. */
  async delete(projectId: number, userId: number, rawId: string): Promise<void> {
    const id = parseDefinitionId(rawId);
    await this.sql.begin(async (tx) => {
      const before = await getDefinition(tx, projectId, id, { forUpdate: true });
      if (!before) throw errors.notFound();
      await deleteDefinition(tx, id);
      await writeActivity(tx, { projectId, userId, activity: 'deleted', scope: ACTIVITY_SCOPE, itemId: id, name: before.name, changes: null });
    });
  }

  /** D5: `{query_usage_30_day: 0}` (no query tracking; see module doc). @throws ApiError 404. */
  async metrics(projectId: number, rawId: string): Promise<{ query_usage_30_day: number }> {
    const row = await getDefinition(this.sql, projectId, parseDefinitionId(rawId));
    if (!row) throw errors.notFound();
    return { query_usage_30_day: 0 };
  }
}
