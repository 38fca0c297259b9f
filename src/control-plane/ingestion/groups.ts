/**
 * Groups from capture (PostHog `groups` / `group-type-manager.ts`):
 * - `$groupidentify` with `$group_type`, `$group_key` and `$group_set` creates or updates the
 *   group's properties (`$group_set` overwrites keys, `$group_set_once` sets missing ones);
 * - group types and keys longer than MAX_KEY_CHARS are ignored;
 * - a group type seen for the first time (in `$groupidentify` or in any event's `$groups`)
 *   gets the lowest free index 0–4; a project already holding five types ignores new ones.
 * New mappings and changed groups enter the change log through the batch's {@link ChangeSet}.
 */
import type { Tx } from '../db/connect.js';
import type { ChangeSet } from './changes.js';
import { applySet, withinPropertiesBound, type RefusedUpdates } from './properties.js';
import { isObject, MAX_KEY_CHARS, type IngestEvent, type Properties } from '../../contract/events.js';
import { hasOwn, setOwn } from '../../own-property.js';

/** PostHog allows five group types per project (indexes 0..4). */
export const MAX_GROUP_TYPES = 5;

/** Per-batch cache of group-type indexes: `${project}:${type}` → index (null = no free index). */
export type GroupTypeCache = Map<string, number | null>;

/** The index of `groupType` in the project, creating the mapping when new. */
export async function groupTypeIndex(tx: Tx, changes: ChangeSet, cache: GroupTypeCache, projectId: number,
  groupType: string): Promise<number | null> {
  const cacheKey = `${projectId}:${groupType}`;
  const cached = cache.get(cacheKey);
  if (cached !== undefined) return cached;
  const rows = await tx<{ group_type: string; group_type_index: number }[]>`
    SELECT group_type, group_type_index FROM group_type_mappings WHERE project_id = ${projectId}`;
  let index: number | null = rows.find((r) => r.group_type === groupType)?.group_type_index ?? null;
  if (index === null && rows.length < MAX_GROUP_TYPES) {
    const used = new Set(rows.map((r) => r.group_type_index));
    let free = 0;
    while (used.has(free)) free++;
    await tx`INSERT INTO group_type_mappings (project_id, group_type, group_type_index) VALUES (${projectId}, ${groupType}, ${free})`;
    changes.mappingCreated({ project_id: projectId, group_type: groupType, group_type_index: free });
    index = free;
  }
  cache.set(cacheKey, index);
  return index;
}

/** Applies the group side of one event; an update past MAX_PROPERTIES_BYTES is not applied (counted in `refused`). */
export async function processGroups(tx: Tx, changes: ChangeSet, cache: GroupTypeCache, ev: IngestEvent, refused: RefusedUpdates = { count: 0 }): Promise<void> {
  const p = ev.properties;
  if (isObject(p.$groups)) {
    for (const type of Object.keys(p.$groups)) {
      if (type.length > 0 && type.length <= MAX_KEY_CHARS) await groupTypeIndex(tx, changes, cache, ev.projectId, type);
    }
  }
  if (ev.event !== '$groupidentify') return;
  const type = p.$group_type;
  const rawKey = p.$group_key;
  if (typeof type !== 'string' || type.length === 0 || type.length > MAX_KEY_CHARS) return;
  if ((typeof rawKey !== 'string' || rawKey.length === 0) && typeof rawKey !== 'number') return;
  const key = String(rawKey);
  if (key.length > MAX_KEY_CHARS) return; // would not fit the groups primary key's btree entry
  const index = await groupTypeIndex(tx, changes, cache, ev.projectId, type);
  if (index === null) return;
  const [existing] = await tx<{ properties: Properties }[]>`SELECT properties FROM groups
    WHERE project_id = ${ev.projectId} AND group_type_index = ${index} AND group_key = ${key} FOR UPDATE`;
  const properties: Properties = { ...(existing?.properties ?? {}) };
  let changed = !existing;
  const setOnce = p.$group_set_once;
  if (isObject(setOnce)) {
    for (const k of Object.keys(setOnce)) if (!hasOwn(properties, k)) { setOwn(properties, k, setOnce[k]); changed = true; }
  }
  if (isObject(p.$group_set)) changed = applySet(properties, p.$group_set) || changed;
  if (!changed) return;
  if (!withinPropertiesBound(properties)) { refused.count++; return; }
  if (existing) {
    await tx`UPDATE groups SET properties = ${tx.json(properties as never)}, version = version + 1
      WHERE project_id = ${ev.projectId} AND group_type_index = ${index} AND group_key = ${key}`;
  } else {
    await tx`INSERT INTO groups (project_id, group_type_index, group_key, properties, created_at)
      VALUES (${ev.projectId}, ${index}, ${key}, ${tx.json(properties as never)}, ${ev.timestamp})`;
  }
  changes.groupChanged({ project_id: ev.projectId, group_type_index: index, group_key: key, properties });
}
