/**
 * The evaluation node's LMDB store (DESIGN.md "Evaluation node"; STYLE.md rule 9): everything
 * evaluation needs, in `<dataDir>/lmdb`, written only by the node's Watch client and read by the
 * HTTP layer and (read-only, same environment) by the worker threads.
 *
 * Atomicity:
 * - a tail batch and its revision are written in ONE LMDB transaction ({@link WritableNodeStore.applyBatch}),
 *   aborted as a whole when any change in it throws;
 * - a snapshot is staged under a new *generation* (every key starts with it, see apply.ts) in as
 *   many transactions as it takes, and swapped in by ONE transaction that sets the active
 *   generation, the revision and the `complete_snapshot` marker. Readers resolve the active
 *   generation first, so they see the old state or the new one, never a mix; an interrupted
 *   snapshot stays staged with the cursor of its last chunk ({@link WritableNodeStore.pendingSnapshot})
 *   until it is resumed, or dropped by the next fresh snapshot. The superseded
 *   generation is deleted after the swap, in the background, chunk by chunk between batches.
 *
 * Reads are synchronous. Every read first resolves the meta record (active generation,
 * revision, marker, tenancy counter); lookups of projects, organizations and keys are memoised
 * until the tenancy counter moves, and `definitions()` per project until that project's
 * definitions revision moves. Both checks work in read-only worker threads, which never see
 * {@link NodeStore.onApplied}.
 */
import { environmentFigures } from './figures.js';
import { open, type Database, type RootDatabase } from 'lmdb';
import {
  projectAcceptsToken,
  type CohortEntity, type FeatureFlagEntity, type GroupTypeMappingEntity, type OrganizationEntity, type PersonalApiKeyEntity, type ProjectEntity,
} from '../../contract/entities.js';
import { applyChange, entityKey, stageFresh, type GenKey, type StoreChange, type StoreDbs } from './apply.js';
import { keyPart, wasDigested } from './key-part.js';
import { setOwn } from '../../own-property.js';
import { STORE_FORMAT } from '../../contract/store-format.js';
import { prepareLmdbDir, restrictLmdbFiles } from './files.js';
import { markCleanClose } from './clean-close.js';
import { entityCodec } from './entity-codec.js';
import { WriteQueue } from './write-queue.js';
import { EMPTY_STATE, MetaRecords, type MetaState, type StagingRecord } from './meta.js';

export type { StoreChange };

export {
  StoreCorruptionError, StoreStateError,
  type NodeGroup, type NodeHashKeyOverride, type NodePerson, type NodeStore, type ProjectDefinitions, type WritableNodeStore,
} from './types.js';
import {
  StoreCorruptionError, StoreStateError,
  type NodeGroup, type NodeHashKeyOverride, type NodePerson, type NodeStore, type ProjectDefinitions, type WritableNodeStore,
} from './types.js';

/** Keys removed per transaction (and per write-queue slot) when dropping a superseded generation. */
export const DROP_CHUNK_KEYS = 5_000;

/** Kinds cached by {@link MetaState.tenancy}. */
const TENANCY_KINDS: ReadonlySet<string> = new Set(['project', 'organization', 'personal_api_key']);
/** Longest a read-only store serves one LMDB snapshot before looking for newer commits, in ms. */
export const READ_REFRESH_MS = 1;
/** Entries per tenancy lookup cache before it is cleared (bounds memory under random tokens). */
export const TENANCY_CACHE_MAX = 10_000;

/**
 * Opens (creating when writable) the LMDB environment at `path`.
 * `readOnly` opens an environment a writer already created (worker threads); its write
 * methods throw {@link StoreStateError}. `mapSize` (bytes) reserves the map up front
 * (config.lmdbMapSize: one mapping for the process' life).
 *
 * Read cost: the writer keeps the meta record in memory; a read-only store re-reads it (one
 * small get, ~0.5 µs, on a renewed read transaction) at most every {@link READ_REFRESH_MS}. Project, organization and key lookups are then memoised until the
 * tenancy counter moves (measured ~4 µs → well under 1 µs per `projectByToken` on the hot path),
 * and `definitions()` revalidates against the project's definitions revision only when the
 * store's revision moved.
 * @throws when the directory holds an incompatible layout, or lmdb cannot open it.
 */
export function openNodeStore(path: string, opts: { readOnly?: boolean; mapSize?: number } = {}): WritableNodeStore {
  const readOnly = opts.readOnly ?? false;
  let readErrors = 0;
  if (!readOnly) prepareLmdbDir(path);
  const root: RootDatabase = open({ path, maxDbs: 16, readOnly, encoding: 'msgpack', ...(opts.mapSize ? { mapSize: opts.mapSize } : {}) });
  if (!readOnly) restrictLmdbFiles(path);
  const db = <V>(name: string, extra: { dupSort?: boolean } = {}): Database<V, GenKey> =>
    root.openDB<V, GenKey>({ name, encoding: 'msgpack', ...extra });
  // A writer creates its named databases and checks (or writes) the layout in one write
  // transaction: lmdb-js commits, and syncs, once per openDB and put otherwise (ten syncs for a
  // new store, ~55 ms on a disk).
  const openAll = (): { records: MetaRecords; dbs: StoreDbs } => {
    const records = new MetaRecords(root.openDB<unknown, string>({ name: 'meta', encoding: 'msgpack' }));
    const dbs: StoreDbs = {
      entities: root.openDB<unknown, GenKey>({ name: 'entities', encoder: entityCodec(() => { readErrors++; }) } as never),
      owner: db('owner'),
      byProject: db('by_project', { dupSort: true }),
      byToken: db('by_token'),
      byKeyHash: db('by_key_hash'),
      defsRev: db('defs_rev'),
      byDistinctId: db('by_distinct_id'),
      overridesByPerson: db('overrides_by_person', { dupSort: true }),
    };
    if (!readOnly) {
      const format = records.format();
      if (format === undefined) records.putFormat(STORE_FORMAT);
      else if (format !== STORE_FORMAT) throw new StoreStateError(`LMDB at ${path} has layout ${String(format)}, expected ${STORE_FORMAT}; wipe it to rebuild from the control plane`);
    }
    return { records, dbs };
  };
  const { records, dbs } = readOnly ? openAll() : root.transactionSync(openAll);
  const all: Database<unknown, GenKey>[] = Object.values(dbs) as Database<unknown, GenKey>[];

  const readState = (): MetaState => records.state();
  // The writer is the only one changing the record: it mirrors it in memory after each commit.
  let mem: MetaState = readState();
  // A read-only store (worker thread) re-reads it at most every READ_REFRESH_MS, each time on a
  // fresh LMDB read transaction. This must not depend on the event loop: lmdb-js renews its read
  // transaction on a setTimeout(0), and Piscina workers in `atomics: 'sync'` mode run task after
  // task without ever returning to the loop, so they would otherwise read one snapshot forever.
  let checked: MetaState = EMPTY_STATE;
  let checkedAtMs = -Infinity;
  const state = readOnly
    ? (): MetaState => {
      const now = performance.now();
      if (now - checkedAtMs >= READ_REFRESH_MS) {
        root.resetReadTxn();
        checked = readState();
        checkedAtMs = now;
      }
      return checked;
    }
    : (): MetaState => mem;

  const listeners = new Set<(revision: number, projectIds: Set<number | null>) => void>();
  const defsCache = new Map<number, { gen: number; rev: number; checkedAt: number; value: ProjectDefinitions }>();
  const tc = {
    gen: -1, tenancy: -1,
    tokens: new Map<string, ProjectEntity | undefined>(),
    projects: new Map<number, ProjectEntity | undefined>(),
    orgs: new Map<number, OrganizationEntity | undefined>(),
    keys: new Map<string, PersonalApiKeyEntity | undefined>(),
  };
  /** Tenancy caches valid for `st` (cleared when the generation or tenancy counter moved). */
  const tenancyCaches = (st: MetaState): typeof tc => {
    if (tc.gen !== st.gen || tc.tenancy !== st.tenancy) {
      tc.gen = st.gen; tc.tenancy = st.tenancy;
      tc.tokens.clear(); tc.projects.clear(); tc.orgs.clear(); tc.keys.clear();
    }
    return tc;
  };
  const memo = <K, V>(m: Map<K, V>, k: K, load: () => V): V => {
    if (m.has(k)) return m.get(k) as V;
    const v = load();
    if (m.size >= TENANCY_CACHE_MAX) m.clear();
    m.set(k, v);
    return v;
  };

  // Every write goes through this queue (write-queue.ts); snapshot chunks overlap their commit.
  const queue = new WriteQueue();
  const enqueue = <T>(fn: () => Promise<T>): Promise<T> => queue.run(fn);
  let staging: (StagingRecord & { touched: Set<number | null>; poisoned?: boolean }) | null = null;
  let closed = false;
  if (!readOnly) {
    // A snapshot staged before a restart continues where it stopped (sync/client.ts resumes it).
    const r = records.staging();
    if (r !== undefined && r.gen === mem.gen + 1) staging = { ...r, touched: new Set() };
    else if (r !== undefined) records.removeStaging();
  }

  const writable = (): void => {
    if (readOnly) throw new StoreStateError('store opened read-only');
    if (closed) throw new StoreStateError('store closed');
  };
  const notify = (revision: number, touched: Set<number | null>): void => {
    for (const id of touched) if (id !== null) defsCache.delete(id);
    for (const l of listeners) l(revision, touched);
  };

  /** Deletes up to DROP_CHUNK_KEYS keys of `range` in one transaction; false when none was left. */
  const dropChunk = async (range: { start?: GenKey; end?: GenKey }): Promise<boolean> => {
    for (const d of all) {
      const keys = [...d.getKeys({ ...range, limit: DROP_CHUNK_KEYS })];
      if (keys.length === 0) continue;
      await root.transaction(() => { for (const k of keys) d.removeSync(k); });
      return true;
    }
    return false;
  };
  /** Deletes every key of generations other than `keep` (inside one queue slot). */
  const dropOtherGenerations = async (keep: number): Promise<void> => {
    for (const range of [{ end: [keep] }, { start: [keep + 1] }]) while (await dropChunk(range)) { /* next chunk */ }
  };
  /**
   * Deletes the generations below `keep` in the background, one chunk per queue slot, so tail
   * batches interleave with the clean-up of a superseded (possibly huge) state instead of
   * waiting behind it. Only generations BELOW are touched: a snapshot staged meanwhile lives
   * above the active one.
   */
  const dropOlderInBackground = (keep: number): void => {
    void (async () => {
      while (!closed && await enqueue(() => dropChunk({ end: [keep] }))) { /* next chunk */ }
    })().catch(() => { /* retried on the next open or snapshot */ });
  };

  // Superseded state whose clean-up did not finish before a restart: drop it in the background.
  // (A staged snapshot, above the active generation, is resumed or dropped by the next one.)
  if (!readOnly) dropOlderInBackground(state().gen);

  const store: WritableNodeStore = {
    revision: () => state().revision,
    hasCompleteSnapshot: () => state().complete,
    readErrors: () => readErrors,

    projectByToken(token) {
      const st = state();
      const p = memo(tenancyCaches(st).tokens, token, () => {
        const id = dbs.byToken.get([st.gen, keyPart(token)]);
        return id === undefined ? undefined : dbs.entities.get(entityKey(st.gen, 'project', String(id))) as ProjectEntity | undefined;
      });
      // Checked on every read, not memoised: a replaced key's overlap ends by this clock, with no
      // write to move the tenancy counter. Also rejects a different token that shares a digested key.
      return p !== undefined && projectAcceptsToken(p, token, Date.now()) ? p : undefined;
    },
    project(id) {
      const st = state();
      return memo(tenancyCaches(st).projects, id, () => dbs.entities.get(entityKey(st.gen, 'project', String(id))) as ProjectEntity | undefined);
    },
    organization(id) {
      const st = state();
      return memo(tenancyCaches(st).orgs, id, () => dbs.entities.get(entityKey(st.gen, 'organization', String(id))) as OrganizationEntity | undefined);
    },
    personalApiKeyByHash(secureValue) {
      const st = state();
      return memo(tenancyCaches(st).keys, secureValue, () => {
        const id = dbs.byKeyHash.get([st.gen, secureValue]);
        return id === undefined ? undefined : dbs.entities.get(entityKey(st.gen, 'personal_api_key', id)) as PersonalApiKeyEntity | undefined;
      });
    },

    personByDistinctId(projectId, distinctId) {
      const g = state().gen;
      const id = dbs.byDistinctId.get([g, projectId, keyPart(distinctId)]);
      const person = id === undefined ? undefined : dbs.entities.get(entityKey(g, 'person', id)) as NodePerson | undefined;
      return person !== undefined && wasDigested(distinctId) && !person.distinct_ids.includes(distinctId) ? undefined : person;
    },
    group(projectId, groupTypeIndex, groupKey) {
      const g = dbs.entities.get(entityKey(state().gen, 'group', `${projectId}:${groupTypeIndex}:${groupKey}`)) as NodeGroup | undefined;
      return g !== undefined && wasDigested(groupKey) && g.group_key !== groupKey ? undefined : g;
    },
    hashKeyOverrides(projectId, personId) {
      const g = state().gen;
      const out: Record<string, string> = {};
      for (const flagKey of dbs.overridesByPerson.getValues([g, projectId, keyPart(personId)])) {
        const o = dbs.entities.get(entityKey(g, 'hash_key_override', `${projectId}:${personId}:${flagKey}`)) as NodeHashKeyOverride | undefined;
        if (o) setOwn(out, flagKey, o.hash_key); // a flag may be keyed `__proto__`
      }
      return out;
    },

    definitions(projectId) {
      const st = state();
      const g = st.gen;
      const hit = defsCache.get(projectId);
      if (hit && hit.gen === g && hit.checkedAt === st.revision) return hit.value;
      const rev = dbs.defsRev.get([g, projectId]) ?? 0;
      if (hit && hit.gen === g && hit.rev === rev) { hit.checkedAt = st.revision; return hit.value; }
      const load = <T>(kind: string): T[] => {
        const out: T[] = [];
        for (const id of dbs.byProject.getValues([g, projectId, kind])) {
          const e = dbs.entities.get(entityKey(g, kind, id));
          if (e !== undefined) out.push(e as T);
        }
        return out;
      };
      const byId = (a: { id: number }, b: { id: number }): number => a.id - b.id;
      const groupTypeMapping: Record<string, string> = {};
      for (const m of load<GroupTypeMappingEntity>('group_type_mapping')) groupTypeMapping[String(m.group_type_index)] = m.group_type;
      const value: ProjectDefinitions = {
        revision: rev,
        flags: load<FeatureFlagEntity>('feature_flag').sort(byId),
        cohorts: load<CohortEntity>('cohort').sort(byId),
        groupTypeMapping,
      };
      defsCache.set(projectId, { gen: g, rev, checkedAt: st.revision, value });
      return value;
    },

    onApplied(listener) {
      listeners.add(listener);
      return () => { listeners.delete(listener); };
    },

    storage() {
      return environmentFigures(path, root);
    },

    relayApplied(revision, projectIds) {
      if (!readOnly) throw new StoreStateError('relayApplied is for read-only stores; the writer reports its own writes');
      checkedAtMs = -Infinity;
      for (const l of listeners) l(revision, projectIds);
    },

    applyBatch(changes, revision) {
      writable();
      return enqueue(async () => {
        const touched = new Set<number | null>();
        const tenancy = changes.some((c) => TENANCY_KINDS.has(c.kind));
        const next: MetaState = { ...mem, revision, tenancy: mem.tenancy + (tenancy ? 1 : 0) };
        // A child transaction: a change that throws aborts the whole batch (lmdb-js commits the
        // earlier writes of a throwing plain `transaction` callback), so the caller can retry
        // change by change without leaving half of one applied.
        await root.childTransaction(() => {
          for (const c of changes) applyChange(dbs, next.gen, c, revision, touched);
          records.putState(next);
        });
        mem = next;
        notify(revision, touched);
      });
    },

    beginSnapshot(revision) {
      writable();
      return enqueue(async () => {
        const active = mem.gen;
        staging = null;
        await root.transaction(() => { records.removeStaging(); });
        await dropOtherGenerations(active);
        const next = { gen: active + 1, revision, touched: new Set<number | null>(), cursor: null };
        await root.transaction(() => { records.putStaging(next); });
        staging = next;
      });
    },

    stageSnapshot(changes, cursor) {
      writable();
      const staged = (): NonNullable<typeof staging> => {
        if (!staging) throw new StoreStateError('stageSnapshot without beginSnapshot');
        return staging;
      };
      if (cursor !== undefined && changes.length > 0) {
        // A chunk: entities new to the staged generation, written without reads (apply.ts);
        // its puts are queued now and commit while the next chunk is decoded and encoded. A
        // failed commit fails the next write, and the staged part is no longer offered for
        // resuming (its persisted cursor could be past what committed).
        return queue.runOverlapping(() => {
          const s = staged(); // throws at once, failing this write, without a staged snapshot
          return stageFresh(dbs, s.gen, changes, s.revision, s.touched, () => records.queueStaging({ ...s, cursor })).then(
            () => { if (!s.poisoned) s.cursor = cursor; },
            (err: unknown) => {
              s.poisoned = true;
              throw new StoreStateError(`a staged snapshot chunk did not commit: ${(err as Error).message}`);
            },
          );
        });
      }
      return enqueue(async () => {
        const s = staged();
        await root.childTransaction(() => {
          for (const c of changes) applyChange(dbs, s.gen, c, s.revision, s.touched);
          if (cursor !== undefined) records.putStaging({ ...s, cursor });
        });
        if (cursor !== undefined) s.cursor = cursor;
      });
    },

    pendingSnapshot() {
      return staging === null ? null : { revision: staging.revision, cursor: staging.poisoned ? null : staging.cursor };
    },

    commitSnapshot(revision) {
      writable();
      return enqueue(async () => {
        const s = staging;
        if (!s) throw new StoreStateError('commitSnapshot without beginSnapshot');
        const previous = mem.gen;
        const touched = s.touched;
        // Projects of the state being replaced are touched too (their definitions may vanish), and
        // every project of the new one (a resumed snapshot staged some before this process ran).
        for (const g of [previous, s.gen]) for (const { value } of dbs.byToken.getRange({ start: [g], end: [g + 1] })) touched.add(value);
        touched.add(null);
        const next: MetaState = { gen: s.gen, revision, complete: true, tenancy: mem.tenancy + 1 };
        await root.transaction(() => { records.putState(next); records.removeStaging(); });
        mem = next;
        staging = null;
        defsCache.clear();
        notify(revision, touched);
        // Superseded state: deleted after the swap; readers already resolve the new generation.
        dropOlderInBackground(s.gen);
      });
    },

    abortSnapshot() {
      writable();
      return enqueue(async () => {
        staging = null;
        await root.transaction(() => { records.removeStaging(); });
        await dropOtherGenerations(mem.gen);
      });
    },

    copyTo(dir: string) {
      writable();
      return enqueue(async () => {
        await root.backup(dir, true);
        return { revision: mem.revision };
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      await queue.drain();
      await root.close();
      if (!readOnly) await markCleanClose(path);
    },
  };
  return store;
}
