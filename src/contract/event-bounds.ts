/**
 * The bounds one captured event must satisfy to be carried and stored,
 * checked by capture on the node (the client gets a 400 naming the event) and again by
 * ingestion on the control plane (a forged or legacy batch: the event is dead-lettered):
 *
 * - `properties` nest at most MAX_JSON_DEPTH levels; a top-level `$set` / `$set_once` one
 *   level less, since ingestion moves it into `properties` (types.ts `normalizeEvent`), so
 *   whatever capture accepts ingestion accepts too;
 * - the distinct id an event links to its own (`$anon_distinct_id` of `$identify`, `alias` of
 *   `$create_alias` / `$merge_dangerously`) is at most MAX_DISTINCT_ID_CHARS long: it becomes
 *   a Postgres btree key and an LMDB key (PostHog caps distinct ids at 200 characters).
 * Pure.
 */
import { jsonDepth, MAX_DISTINCT_ID_CHARS, MAX_JSON_DEPTH } from '../limits.js';

/** What is wrong with an event: the field (dotted path) and why. */
export interface EventProblem { field: string; reason: string }

/** The event fields the bounds look at. */
export interface BoundedEvent { event: string; properties: Record<string, unknown>; $set?: unknown; $set_once?: unknown }

const LINKED_ID: ReadonlyMap<string, string> = new Map([['$identify', '$anon_distinct_id'], ['$create_alias', 'alias'], ['$merge_dangerously', 'alias']]);

/** The first bound `ev` breaks, or null. */
export function eventProblem(ev: BoundedEvent): EventProblem | null {
  if (jsonDepth(ev.properties, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    return { field: 'properties', reason: `nests deeper than ${MAX_JSON_DEPTH} levels` };
  }
  for (const field of ['$set', '$set_once'] as const) {
    const v = ev[field];
    if (typeof v === 'object' && v !== null && jsonDepth(v, MAX_JSON_DEPTH - 1) > MAX_JSON_DEPTH - 1) {
      return { field, reason: `nests deeper than ${MAX_JSON_DEPTH - 1} levels` };
    }
  }
  const linked = LINKED_ID.get(ev.event);
  if (linked !== undefined) {
    const id = ev.properties[linked];
    if ((typeof id === 'string' || typeof id === 'number') && String(id).length > MAX_DISTINCT_ID_CHARS) {
      return { field: `properties.${linked}`, reason: `is longer than ${MAX_DISTINCT_ID_CHARS} characters` };
    }
  }
  return null;
}
