/**
 * Applies entity changes to one generation of the node's LMDB layout (DESIGN.md "Evaluation
 * node"; STYLE.md rule 9 "batch applier"). Pure bookkeeping over the databases of
 * {@link StoreDbs}; callers run it inside ONE write transaction together with the revision
 * update, so a crash never leaves half a change.
 *
 * Key layout (every key starts with the generation `g`, so a snapshot can be staged beside
 * the live state and swapped in by changing one number; see lmdb.ts):
 *
 * | database   | key                     | value                                  |
 * |------------|-------------------------|----------------------------------------|
 * | entities   | [g, kind, entityId]     | entity (msgpack, contract/payload.ts codec)|
 * | owner      | [g, kind, entityId]     | owning project id (project-scoped only)|
 * | byProject  | [g, projectId, kind]    | entityId (dupSort: one value per entity)|
 * | byToken    | [g, api_token]          | project id (also its previous_api_token)|
 * | byKeyHash  | [g, secure_value]       | personal API key id                    |
 * | defsRev    | [g, projectId]          | last revision that changed the project's flags, cohorts or group types |
 * | byDistinctId | [g, projectId, distinctId] | person id (uuid)                   |
 * | overridesByPerson | [g, projectId, personId] | flag key (dupSort)              |
 *
 * Every id inside a key goes through `keyPart` (key-part.ts): ids longer than 400 code units
 * become a fixed-size digest, so no public input can exceed LMDB's key size.
 *
 * `owner` and `byProject` cover only the definition kinds (flags, cohorts, group types), the
 * ones `definitions()` enumerates per project; persons, groups and overrides are reached
 * through their own keys and indexes.
 *
 * `touched` (what `onApplied` reports): projects whose definitions or project record changed,
 * and null for cluster-wide entities (organizations, personal API keys). Person, group and
 * hash-key-override changes touch nothing: they arrive with capture, far more often than
 * definitions change, and must not drop compiled-definition caches.
 *
 * Project tokens: `byToken` maps both the current key and, while the entity carries one, the key
 * a reset replaced; whether the latter is still accepted is decided at read time against its
 * expiry (lmdb.ts `projectByToken`), so its entry may outlive the overlap until the project
 * changes again.
 *
 * Deleted flags and cohorts: an upsert whose payload has `deleted: true` removes the entity,
 * matching the snapshot, which omits them (control-plane/grpc/snapshot.ts).
 */
import type { Database } from 'lmdb';
import { keyPart } from './key-part.js';
import { personIndexFields } from '../../contract/person-index-fields.js';

/** Kinds whose changes invalidate a project's compiled definitions. */
export const DEFINITION_KINDS: ReadonlySet<string> = new Set(['feature_flag', 'cohort', 'group_type_mapping']);
/** Capture-owned kinds: stored properties and overrides, never part of compiled definitions. */
export const CAPTURE_KINDS: ReadonlySet<string> = new Set(['person', 'group', 'hash_key_override']);
/** Kinds removed when upserted with `deleted: true`. */
const SOFT_DELETED_KINDS: ReadonlySet<string> = new Set(['feature_flag', 'cohort']);

/** One change as the store applies it (decoded from a Watch `Change`). `projectId` null = cluster-wide. */
export interface StoreChange {
  kind: string;
  entityId: string;
  projectId: number | null;
  op: 'upsert' | 'delete';
  /** Entity state for upserts; ignored for deletes. */
  payload: unknown;
  /** The payload's msgpack as it arrived (contract/payload.ts codec): stored as is, not re-encoded. */
  raw?: Uint8Array;
}

/** Generation-prefixed key (see the table above). */
export type GenKey = (string | number)[];

/** The generational databases of one LMDB environment. */
export interface StoreDbs {
  entities: Database<unknown, GenKey>;
  owner: Database<number, GenKey>;
  byProject: Database<string, GenKey>;
  byToken: Database<number, GenKey>;
  byKeyHash: Database<string, GenKey>;
  defsRev: Database<number, GenKey>;
  byDistinctId: Database<string, GenKey>;
  overridesByPerson: Database<string, GenKey>;
}

function isDeletedPayload(kind: string, payload: unknown): boolean {
  return SOFT_DELETED_KINDS.has(kind) && typeof payload === 'object' && payload !== null && (payload as { deleted?: unknown }).deleted === true;
}

/** The keys a project entity is reached by in `byToken`: its API key and any previous one (see the module doc). */
function projectTokens(entity: object): string[] {
  const { api_token: token, previous_api_token: previous } = entity as { api_token?: unknown; previous_api_token?: unknown };
  const out: string[] = [];
  if (typeof token === 'string') out.push(token);
  if (typeof previous === 'string' && previous !== token) out.push(previous);
  return out;
}

/** Removes the secondary-index entries of an entity's previous state. */
function unindex(dbs: StoreDbs, gen: number, kind: string, entityId: string, old: unknown): void {
  if (old === undefined || old === null || typeof old !== 'object') return;
  if (kind === 'project') {
    for (const token of projectTokens(old)) dbs.byToken.removeSync([gen, keyPart(token)]);
  } else if (kind === 'personal_api_key') {
    const hash = (old as { secure_value?: unknown }).secure_value;
    if (typeof hash === 'string') dbs.byKeyHash.removeSync([gen, hash]);
  } else if (kind === 'person') {
    const { project_id: pid, distinct_ids: ids } = old as { project_id?: unknown; distinct_ids?: unknown };
    if (typeof pid !== 'number' || !Array.isArray(ids)) return;
    for (const d of ids) {
      // A merge may already have moved this distinct id to the surviving person in this batch.
      if (typeof d === 'string' && dbs.byDistinctId.get([gen, pid, keyPart(d)]) === entityId) dbs.byDistinctId.removeSync([gen, pid, keyPart(d)]);
    }
  } else if (kind === 'hash_key_override') {
    const { project_id: pid, person_id: person, feature_flag_key: key } = old as { project_id?: unknown; person_id?: unknown; feature_flag_key?: unknown };
    if (typeof pid === 'number' && typeof person === 'string' && typeof key === 'string') dbs.overridesByPerson.removeSync([gen, pid, keyPart(person)], key);
  }
}

/** Writes one key: `putSync` inside a write transaction, or a queued `put` (see {@link stageFresh}). */
type Put = <V>(db: Database<V, GenKey>, key: GenKey, value: V) => void;
const putSync: Put = (db, key, value) => { db.putSync(key, value); };

/** Adds the secondary-index entries of an entity's new state. */
function index(dbs: StoreDbs, gen: number, kind: string, entityId: string, entity: unknown, put: Put): void {
  if (typeof entity !== 'object' || entity === null) return;
  if (kind === 'project') {
    const id = (entity as { id?: unknown }).id;
    for (const token of projectTokens(entity)) put(dbs.byToken, [gen, keyPart(token)], typeof id === 'number' ? id : Number(entityId));
  } else if (kind === 'personal_api_key') {
    const hash = (entity as { secure_value?: unknown }).secure_value;
    if (typeof hash === 'string') put(dbs.byKeyHash, [gen, hash], entityId);
  } else if (kind === 'person') {
    const { project_id: pid, distinct_ids: ids } = entity as { project_id?: unknown; distinct_ids?: unknown };
    if (typeof pid !== 'number' || !Array.isArray(ids)) return;
    for (const d of ids) if (typeof d === 'string') put(dbs.byDistinctId, [gen, pid, keyPart(d)], entityId);
  } else if (kind === 'hash_key_override') {
    const { project_id: pid, person_id: person, feature_flag_key: key } = entity as { project_id?: unknown; person_id?: unknown; feature_flag_key?: unknown };
    if (typeof pid === 'number' && typeof person === 'string' && typeof key === 'string') put(dbs.overridesByPerson, [gen, pid, keyPart(person)], key);
  }
}

/** Key of an entity in `entities` and `owner`: [gen, kind, keyPart(entityId)]. */
export function entityKey(gen: number, kind: string, entityId: string): GenKey {
  return [gen, kind, keyPart(entityId)];
}

/**
 * Applies `change` to generation `gen` at `revision`, adding the project ids it touches (see
 * the module doc) to `touched`. Must run inside a write transaction.
 */
export function applyChange(dbs: StoreDbs, gen: number, change: StoreChange, revision: number, touched: Set<number | null>): void {
  const { kind, entityId } = change;
  const key = entityKey(gen, kind, entityId);
  if (kind === 'person') { applyPerson(dbs, gen, change, key); return; }
  const remove = change.op === 'delete' || isDeletedPayload(kind, change.payload);

  unindex(dbs, gen, kind, entityId, dbs.entities.get(key));
  if (remove) dbs.entities.removeSync(key);
  else {
    dbs.entities.putSync(key, change.raw ?? change.payload);
    index(dbs, gen, kind, entityId, change.payload, putSync);
  }

  track(dbs, gen, change, key, DEFINITION_KINDS.has(kind) ? dbs.owner.get(key) : undefined, remove, revision, touched, putSync);
}

/** The same distinct ids in the same order (the control plane sorts them: contract/entities.ts). */
function sameIds(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A person change (capture-owned: touches nothing, no per-project bookkeeping). The previous
 * state's index fields are read from its stored bytes without decoding its properties
 * (contract/person-index-fields.ts). When an upsert keeps the person's project and distinct ids,
 * the index entries are only checked, and written where they do not point at this person (a
 * merge earlier in the batch may have moved one): the same end state as removing and adding
 * them, at a read per id instead of a read, a delete and a write.
 */
function applyPerson(dbs: StoreDbs, gen: number, change: StoreChange, key: GenKey): void {
  const { entityId } = change;
  const stored = dbs.entities.getBinaryFast(key);
  const old = stored === undefined ? undefined : personIndexFields(stored) ?? dbs.entities.get(key);
  if (change.op === 'delete') {
    unindex(dbs, gen, 'person', entityId, old);
    dbs.entities.removeSync(key);
    return;
  }
  dbs.entities.putSync(key, change.raw ?? change.payload);
  const next = change.payload as { project_id?: unknown; distinct_ids?: unknown } | null;
  const prev = old as { project_id?: unknown; distinct_ids?: unknown } | undefined;
  if (next && prev && typeof next.project_id === 'number' && next.project_id === prev.project_id
    && Array.isArray(next.distinct_ids) && Array.isArray(prev.distinct_ids) && sameIds(next.distinct_ids, prev.distinct_ids)) {
    for (const d of next.distinct_ids) {
      if (typeof d !== 'string') continue;
      const k = [gen, next.project_id, keyPart(d)];
      if (dbs.byDistinctId.get(k) !== entityId) dbs.byDistinctId.putSync(k, entityId);
    }
    return;
  }
  unindex(dbs, gen, 'person', entityId, old);
  index(dbs, gen, 'person', entityId, change.payload, putSync);
}

/**
 * The per-project bookkeeping of one change (module doc): for definition kinds the owner and
 * byProject entries move from `oldOwner` to the change's project (none when `remove`) and the
 * projects' definitions revisions are set; other kinds outside capture touch their project.
 */
function track(dbs: StoreDbs, gen: number, change: StoreChange, key: GenKey, oldOwner: number | undefined, remove: boolean,
  revision: number, touched: Set<number | null>, put: Put): void {
  const { kind, entityId } = change;
  if (!DEFINITION_KINDS.has(kind)) {
    if (!CAPTURE_KINDS.has(kind)) touched.add(change.projectId);
    return;
  }
  const newOwner = remove ? undefined : change.projectId ?? undefined;
  if (oldOwner !== undefined && oldOwner !== newOwner) {
    dbs.byProject.removeSync([gen, oldOwner, kind], entityId);
    dbs.owner.removeSync(key);
    put(dbs.defsRev, [gen, oldOwner], revision);
    touched.add(oldOwner);
  }
  if (newOwner !== undefined && oldOwner !== newOwner) {
    put(dbs.byProject, [gen, newOwner, kind], entityId);
    put(dbs.owner, key, newOwner);
  }
  const project = newOwner ?? oldOwner ?? change.projectId;
  if (project !== undefined && project !== null) {
    put(dbs.defsRev, [gen, project], revision);
    touched.add(project);
  }
}

/**
 * Writes snapshot entities that are new to generation `gen` (a SnapshotChunk: every entity of a
 * paged snapshot is read once, control-plane/grpc/snapshot.ts) as queued lmdb-js `put`s, with no
 * read of a previous state: lmdb-js encodes them here and commits them on its write thread in
 * one batch, in order, so the B-tree work leaves the event loop. `last` is put after them (the
 * chunk's resume cursor: a crash can lose it with the chunk, never keep it without the chunk).
 * Resolves when all are committed. Upserts only; deleted flags and cohorts are skipped.
 * @throws (rejects) when lmdb refuses a write.
 */
export async function stageFresh(dbs: StoreDbs, gen: number, changes: readonly StoreChange[], revision: number,
  touched: Set<number | null>, last?: () => Promise<unknown>): Promise<void> {
  const pending: Promise<unknown>[] = [];
  const put: Put = (db, key, value) => { pending.push(db.put(key, value)); };
  for (const c of changes) {
    if (c.op !== 'upsert' || isDeletedPayload(c.kind, c.payload)) continue;
    const key = entityKey(gen, c.kind, c.entityId);
    put(dbs.entities, key, (c.raw ?? c.payload) as never);
    index(dbs, gen, c.kind, c.entityId, c.payload, put);
    track(dbs, gen, c, key, undefined, false, revision, touched, put);
  }
  if (last) pending.push(last());
  await Promise.all(pending);
}
