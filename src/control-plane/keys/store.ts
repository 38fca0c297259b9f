/**
 * Personal API keys in Postgres: create (returns the value once), and resolve a presented
 * value to its key, user and organization. Each create and revoke also enters the change log,
 * so evaluation nodes can authorise `GET /flags/definitions` with the hash alone.
 */
import crypto from 'node:crypto';
import type { Sql } from '../db/connect.js';
import { appendChanges } from '../change-log/store.js';
import type { PersonalApiKeyEntity } from '../../contract/entities.js';
import { hashPersonalApiKey, hashesEqual, maskKey, newPersonalApiKey } from './tokens.js';
import { unknownKeys } from './unknown-keys.js';

/** Database lookups of presented keys made by {@link findPersonalApiKey} since the process started. */
let lookups = 0;
/** Presented keys answered from the memory of unknown keys, without a lookup. */
let remembered = 0;

/** A resolved key. */
export interface PersonalApiKeyRecord {
  id: string;
  userId: number;
  organizationId: number;
  scopes: string[];
  scopedTeams: number[];
}

/** Input of {@link createPersonalApiKey}. `value` defaults to a fresh random key. */
export interface NewKey { userId: number; label: string; scopes: string[]; scopedTeams?: number[]; value?: string }

/** Row of personal_api_keys joined with its user's organization. */
interface KeyRow { id: string; user_id: number; organization_id: number; secure_value: string; scopes: string[]; scoped_teams: number[]; is_active: boolean }

/** Change-log entity of a key row. */
export function personalApiKeyEntity(row: { id: string; organization_id: number; secure_value: string; scopes: string[]; scoped_teams: number[] }): PersonalApiKeyEntity {
  return { id: row.id, organization_id: row.organization_id, secure_value: row.secure_value, scopes: row.scopes, scoped_teams: row.scoped_teams };
}

/** Creates a key; returns its id and plain value (the only time the value is available). */
export async function createPersonalApiKey(sql: Sql, k: NewKey): Promise<{ id: string; value: string }> {
  const value = k.value ?? newPersonalApiKey();
  const id = crypto.randomUUID();
  const secure = hashPersonalApiKey(value);
  await sql.begin(async (tx) => {
    const [user] = await tx<{ organization_id: number }[]>`SELECT organization_id FROM users WHERE id = ${k.userId}`;
    if (!user) throw new Error(`no user ${k.userId}`);
    await tx`INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, scopes, scoped_teams)
      VALUES (${id}, ${k.userId}, ${k.label}, ${secure}, ${maskKey(value)}, ${k.scopes}, ${k.scopedTeams ?? []})`;
    await appendChanges(tx, [{ projectId: null, kind: 'personal_api_key', entityId: id, op: 'upsert',
      payload: personalApiKeyEntity({ id, organization_id: user.organization_id, secure_value: secure, scopes: k.scopes, scoped_teams: k.scopedTeams ?? [] }) }]);
  });
  unknownKeys.forget(secure); // a miss remembered before the key existed must not refuse it
  return { id, value };
}

/**
 * Resolves a presented key value; undefined when unknown or its user is inactive. The lookup
 * is by the hash's unique index and the stored hash is then compared in constant time. A miss
 * is remembered for a few seconds (./unknown-keys.ts): the same wrong key again is answered
 * without a lookup.
 */
export async function findPersonalApiKey(sql: Sql, value: string): Promise<PersonalApiKeyRecord | undefined> {
  const secure = hashPersonalApiKey(value);
  if (unknownKeys.has(secure)) { remembered++; return undefined; }
  lookups++;
  const [row] = await sql<KeyRow[]>`
    SELECT k.id, k.user_id, u.organization_id, k.secure_value, k.scopes, k.scoped_teams, u.is_active
    FROM personal_api_keys k JOIN users u ON u.id = k.user_id WHERE k.secure_value = ${secure}`;
  if (!row || !row.is_active || !hashesEqual(row.secure_value, secure)) { unknownKeys.add(secure); return undefined; }
  return { id: row.id, userId: row.user_id, organizationId: row.organization_id, scopes: row.scopes, scopedTeams: row.scoped_teams };
}

/** Prometheus text of the key lookups: database lookups made, and unknown keys answered from memory. */
export function personalApiKeyLookupMetrics(): string {
  return '# HELP switchyard_personal_api_key_lookups_total Presented personal API keys looked up in the database.\n'
    + '# TYPE switchyard_personal_api_key_lookups_total counter\n'
    + `switchyard_personal_api_key_lookups_total ${lookups}\n`
    + '# HELP switchyard_personal_api_key_unknown_remembered_total Presented personal API keys refused as recently unknown, without a lookup.\n'
    + '# TYPE switchyard_personal_api_key_unknown_remembered_total counter\n'
    + `switchyard_personal_api_key_unknown_remembered_total ${remembered}\n`;
}

/** Records use at most once an hour (PostHog behaviour), without blocking the request. */
export function touchPersonalApiKey(sql: Sql, id: string): void {
  sql`UPDATE personal_api_keys SET last_used_at = now()
      WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 hour')`.catch(() => {});
}

/** A key as listed (never its value or hash). */
export interface PersonalApiKeyListing {
  id: string; user_id: number; label: string; mask_value: string; scopes: string[]; scoped_teams: number[];
  scoped_organizations: string[]; created_at: Date; last_used_at: Date | null;
}

/** Keys of `userId` (every user's when null), newest first. */
export async function listPersonalApiKeys(sql: Sql, userId: number | null): Promise<PersonalApiKeyListing[]> {
  return sql<PersonalApiKeyListing[]>`
    SELECT id, user_id, label, mask_value, scopes, scoped_teams, scoped_organizations, created_at, last_used_at
    FROM personal_api_keys WHERE ${userId === null ? sql`true` : sql`user_id = ${userId}`} ORDER BY created_at DESC, id`;
}

/**
 * Revokes (deletes) the key `id`, when it belongs to `userId` (any user when null), and enters
 * the deletion in the change log in the same transaction, so every node stops accepting it. @returns the revoked key, or null when there is none.
 */
export async function revokePersonalApiKey(sql: Sql, id: string, userId: number | null): Promise<PersonalApiKeyListing | null> {
  return sql.begin(async (tx) => {
    const [row] = await tx<PersonalApiKeyListing[]>`
      DELETE FROM personal_api_keys WHERE id = ${id} AND ${userId === null ? tx`true` : tx`user_id = ${userId}`}
      RETURNING id, user_id, label, mask_value, scopes, scoped_teams, scoped_organizations, created_at, last_used_at`;
    if (!row) return null;
    await appendChanges(tx, [{ projectId: null, kind: 'personal_api_key', entityId: row.id, op: 'delete', payload: null }]);
    return row;
  }) as Promise<PersonalApiKeyListing | null>;
}

/**
 * Deactivates a user (`is_active = false`): their keys stop authenticating on the control plane
 * at once, and their deletion enters the change log so nodes drop them too.
 * @returns the number of keys withdrawn, or null when there is no such user.
 */
export async function deactivateUser(sql: Sql, userId: number): Promise<number | null> {
  return sql.begin(async (tx) => {
    const [user] = await tx<{ id: number }[]>`UPDATE users SET is_active = false WHERE id = ${userId} RETURNING id`;
    if (!user) return null;
    const keys = await tx<{ id: string }[]>`SELECT id FROM personal_api_keys WHERE user_id = ${userId} ORDER BY id`;
    await appendChanges(tx, keys.map((k) => ({ projectId: null, kind: 'personal_api_key' as const, entityId: k.id, op: 'delete' as const, payload: null })));
    return keys.length;
  }) as Promise<number | null>;
}
