/**
 * The evaluation node's LMDB store (DESIGN.md "Evaluation node"; STYLE.md rule 9): everything
 * evaluation needs, in `<dataDir>/lmdb`, written only by the node's Watch client and read by the
 * HTTP layer and (read-only, same environment) by the worker threads.
 *
 * Atomicity:
 * - a tail batch and its revision are written in ONE LMDB transaction ({@link WritableNodeStore.applyBatch});
 * - a snapshot is staged under a new *generation* (every key starts with it, see apply.ts) in as
 *   many transactions as it takes, and swapped in by ONE transaction that sets the active
 *   generation, the revision and the `complete_snapshot` marker. Readers resolve the active
 *   generation first, so they see the old state or the new one, never a mix; an interrupted
 *   snapshot leaves only an orphan generation, dropped by the next snapshot or on open.
 *   The superseded generation is deleted after the swap, in the background.
 *
 * Reads are synchronous LMDB gets (lmdb-js keeps one read transaction per event-loop turn, so
 * the reads of one synchronous call are consistent). `definitions()` is cached per project and
 * validated against the project's definitions revision (one get), which also works in
 * read-only worker threads that never see {@link NodeStore.onApplied}.
 */
import fs from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import type {
  CohortEntity, FeatureFlagEntity, GroupTypeMappingEntity, OrganizationEntity, PersonalApiKeyEntity, ProjectEntity,
} from '../../control-plane/change-log/entities.js';
import { applyChange, type GenKey, type StoreChange, type StoreDbs } from './apply.js';

export type { StoreChange };

/** On-disk layout version, checked on open. */
export const STORE_FORMAT = 1;
/** Keys removed per transaction when dropping a superseded generation. */
export const DROP_CHUNK_KEYS = 5_000;

/** What compileProject needs for one project. */
export interface ProjectDefinitions {
  /** Last revision that changed this project's flags, cohorts or group types (0 if none). */
  revision: number;
  /** Live flags, by ascending id. */
  flags: FeatureFlagEntity[];
  /** Live cohorts, by ascending id. */
  cohorts: CohortEntity[];
  /** group_type_index (as a string) → group type, as in PostHog's local-evaluation feed. */
  groupTypeMapping: Record<string, string>;
}

/** Read API of the node's state (the HTTP layer and workers use only this). */
export interface NodeStore {
  /** Last applied change-log revision (0 = nothing yet). */
  revision(): number;
  /** True once a complete snapshot has ever been applied (`/_ready`). */
  hasCompleteSnapshot(): boolean;
  /** Project by its API key (`phc_…`). */
  projectByToken(token: string): ProjectEntity | undefined;
  /** Project by id. */
  project(id: number): ProjectEntity | undefined;
  /** Organization by id (quota fields). */
  organization(id: number): OrganizationEntity | undefined;
  /**
   * The project's definitions; cached in memory per project until a change touches them.
   * The returned object is shared: callers must not mutate it.
   */
  definitions(projectId: number): ProjectDefinitions;
  /** Personal API key by its stored hash (`sha256$<hex>`). */
  personalApiKeyByHash(secureValue: string): PersonalApiKeyEntity | undefined;
  /**
   * Subscribes to committed writes of THIS store instance: `projectIds` are the projects the
   * batch touched (null = a cluster-wide entity: organization or personal API key); after a
   * snapshot swap it holds every project of the old and new state plus null. Never called on a
   * read-only store. Returns the unsubscribe function.
   */
  onApplied(listener: (revision: number, projectIds: Set<number | null>) => void): () => void;
  /** Closes the environment (waits for queued writes). */
  close(): Promise<void>;
}

/** The writer's side, used by the Watch client. Every method throws on a read-only store. */
export interface WritableNodeStore extends NodeStore {
  /** Applies tail `changes` and sets `revision`, in one transaction. */
  applyBatch(changes: readonly StoreChange[], revision: number): Promise<void>;
  /** Starts staging a snapshot taken at `revision` (drops any earlier unfinished one). */
  beginSnapshot(revision: number): Promise<void>;
  /** Stages snapshot entities (upserts) into the pending generation. @throws without beginSnapshot. */
  stageSnapshot(changes: readonly StoreChange[]): Promise<void>;
  /** Swaps the staged snapshot in: generation, revision and `complete_snapshot` in one transaction. */
  commitSnapshot(revision: number): Promise<void>;
  /** Forgets the staged snapshot; the live state is untouched. */
  abortSnapshot(): Promise<void>;
}

/** Thrown by write methods of a read-only store or without a staged snapshot. */
export class StoreStateError extends Error {
  constructor(message: string) { super(message); this.name = 'StoreStateError'; }
}

type Meta = Database<unknown, string>;

const META_GEN = 'gen';
const META_REVISION = 'revision';
const META_COMPLETE = 'complete_snapshot';
const META_FORMAT = 'format';

/**
 * Opens (creating when writable) the LMDB environment at `path`.
 * `readOnly` opens an environment a writer already created (worker threads); its write
 * methods throw {@link StoreStateError}.
 * @throws when the directory holds an incompatible layout, or lmdb cannot open it.
 */
export function openNodeStore(path: string, opts: { readOnly?: boolean } = {}): WritableNodeStore {
  const readOnly = opts.readOnly ?? false;
  if (!readOnly) fs.mkdirSync(path, { recursive: true });
  const root: RootDatabase = open({ path, maxDbs: 16, readOnly, encoding: 'msgpack' });
  const db = <V>(name: string, extra: { dupSort?: boolean } = {}): Database<V, GenKey> =>
    root.openDB<V, GenKey>({ name, encoding: 'msgpack', ...extra });
  const meta = root.openDB<unknown, string>({ name: 'meta', encoding: 'msgpack' }) as Meta;
  const dbs: StoreDbs = {
    entities: db('entities'),
    owner: db('owner'),
    byProject: db('by_project', { dupSort: true }),
    byToken: db('by_token'),
    byKeyHash: db('by_key_hash'),
    defsRev: db('defs_rev'),
  };
  const all: Database<unknown, GenKey>[] = Object.values(dbs) as Database<unknown, GenKey>[];

  if (!readOnly) {
    const format = meta.get(META_FORMAT);
    if (format === undefined) meta.putSync(META_FORMAT, STORE_FORMAT);
    else if (format !== STORE_FORMAT) throw new StoreStateError(`LMDB at ${path} has layout ${String(format)}, expected ${STORE_FORMAT}; wipe it to rebuild from the control plane`);
  }

  const gen = (): number => (meta.get(META_GEN) as number | undefined) ?? 0;
  const listeners = new Set<(revision: number, projectIds: Set<number | null>) => void>();
  const defsCache = new Map<number, { gen: number; rev: number; value: ProjectDefinitions }>();
  // Every write goes through this chain, so batches, snapshot steps and clean-up never overlap.
  let queue: Promise<unknown> = Promise.resolve();
  const enqueue = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = queue.then(fn);
    queue = p.catch(() => {});
    return p;
  };
  let staging: { gen: number; revision: number; touched: Set<number | null> } | null = null;
  let closed = false;

  const writable = (): void => {
    if (readOnly) throw new StoreStateError('store opened read-only');
    if (closed) throw new StoreStateError('store closed');
  };
  const notify = (revision: number, touched: Set<number | null>): void => {
    for (const id of touched) if (id !== null) defsCache.delete(id);
    for (const l of listeners) l(revision, touched);
  };

  /** Deletes every key of generations other than `keep`, in chunks (one transaction each). */
  const dropOtherGenerations = async (keep: number): Promise<void> => {
    for (const d of all) {
      for (const range of [{ end: [keep] }, { start: [keep + 1] }]) {
        for (;;) {
          const keys = [...d.getKeys({ ...range, limit: DROP_CHUNK_KEYS })];
          if (keys.length === 0) break;
          await root.transaction(() => { for (const k of keys) d.removeSync(k); });
        }
      }
    }
  };

  // Orphans of a snapshot interrupted by a crash, or a superseded generation whose clean-up
  // did not finish: drop them in the background (readers never look at them).
  if (!readOnly) void enqueue(() => dropOtherGenerations(gen()));

  const entity = <T>(kind: string, id: string): T | undefined => dbs.entities.get([gen(), kind, id]) as T | undefined;

  const store: WritableNodeStore = {
    revision: () => (meta.get(META_REVISION) as number | undefined) ?? 0,
    hasCompleteSnapshot: () => meta.get(META_COMPLETE) === true,

    projectByToken(token) {
      const g = gen();
      const id = dbs.byToken.get([g, token]);
      return id === undefined ? undefined : dbs.entities.get([g, 'project', String(id)]) as ProjectEntity | undefined;
    },
    project: (id) => entity<ProjectEntity>('project', String(id)),
    organization: (id) => entity<OrganizationEntity>('organization', String(id)),
    personalApiKeyByHash(secureValue) {
      const g = gen();
      const id = dbs.byKeyHash.get([g, secureValue]);
      return id === undefined ? undefined : dbs.entities.get([g, 'personal_api_key', id]) as PersonalApiKeyEntity | undefined;
    },

    definitions(projectId) {
      const g = gen();
      const rev = dbs.defsRev.get([g, projectId]) ?? 0;
      const hit = defsCache.get(projectId);
      if (hit && hit.gen === g && hit.rev === rev) return hit.value;
      const load = <T>(kind: string): T[] => {
        const out: T[] = [];
        for (const id of dbs.byProject.getValues([g, projectId, kind])) {
          const e = dbs.entities.get([g, kind, id]);
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
      defsCache.set(projectId, { gen: g, rev, value });
      return value;
    },

    onApplied(listener) {
      listeners.add(listener);
      return () => { listeners.delete(listener); };
    },

    applyBatch(changes, revision) {
      writable();
      return enqueue(async () => {
        const touched = new Set<number | null>();
        await root.transaction(() => {
          const g = gen();
          for (const c of changes) applyChange(dbs, g, c, revision, touched);
          meta.putSync(META_REVISION, revision);
        });
        notify(revision, touched);
      });
    },

    beginSnapshot(revision) {
      writable();
      return enqueue(async () => {
        const active = gen();
        await dropOtherGenerations(active);
        staging = { gen: active + 1, revision, touched: new Set() };
      });
    },

    stageSnapshot(changes) {
      writable();
      return enqueue(async () => {
        const s = staging;
        if (!s) throw new StoreStateError('stageSnapshot without beginSnapshot');
        await root.transaction(() => {
          for (const c of changes) applyChange(dbs, s.gen, c, s.revision, s.touched);
        });
      });
    },

    commitSnapshot(revision) {
      writable();
      return enqueue(async () => {
        const s = staging;
        if (!s) throw new StoreStateError('commitSnapshot without beginSnapshot');
        const previous = gen();
        const touched = s.touched;
        // Projects of the state being replaced are touched too (their definitions may vanish).
        for (const { value } of dbs.byToken.getRange({ start: [previous], end: [previous + 1] })) touched.add(value);
        touched.add(null);
        await root.transaction(() => {
          meta.putSync(META_GEN, s.gen);
          meta.putSync(META_REVISION, revision);
          meta.putSync(META_COMPLETE, true);
        });
        staging = null;
        defsCache.clear();
        notify(revision, touched);
        // Superseded state: deleted after the swap; readers already resolve the new generation.
        void enqueue(() => dropOtherGenerations(s.gen));
      });
    },

    abortSnapshot() {
      writable();
      return enqueue(async () => {
        staging = null;
        await dropOtherGenerations(gen());
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      await queue;
      await root.close();
    },
  };
  return store;
}
