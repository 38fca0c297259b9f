/**
 * The shapes of the evaluation node's store: what it holds (projects' definitions, persons,
 * groups, hash-key overrides), its read API for the HTTP layer and workers, its write API for the
 * Watch client, and its errors. The LMDB implementation is lmdb.ts.
 */
import type {
  CohortEntity, FeatureFlagEntity, GroupTypeMappingEntity, OrganizationEntity, PersonalApiKeyEntity, ProjectEntity,
} from '../../contract/entities.js';
import type { StoreChange } from './apply.js';
import type { EnvironmentFigures } from './figures.js';

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

/**
 * A captured person as the node keeps it (change-log `person` entity, written by ingestion):
 * entity id = `id` (uuid); a person merged away arrives as a delete.
 */
export interface NodePerson {
  id: string; project_id: number; distinct_ids: string[]; properties: Record<string, unknown>;
  /** Static cohorts the person is in (absent when none). */
  cohort_ids?: number[];
}
/** A group's stored properties (change-log `group` entity, id `<project>:<index>:<key>`). */
export interface NodeGroup { project_id: number; group_type_index: number; group_key: string; properties: Record<string, unknown> }
/** One hash-key override (change-log `hash_key_override` entity, id `<project>:<person>:<flag key>`). */
export interface NodeHashKeyOverride { project_id: number; person_id: string; feature_flag_key: string; hash_key: string }

/** Read API of the node's state (the HTTP layer and workers use only this). */
export interface NodeStore {
  /** Last applied change-log revision (0 = nothing yet). */
  revision(): number;
  /** True once a complete snapshot has ever been applied (`/_ready`). */
  hasCompleteSnapshot(): boolean;
  /**
   * Entity reads of this store instance that failed to decode since it was opened (damaged
   * pages). A node with any is not ready (http/probes.ts); the next start's
   * probe moves the store aside (recover.ts).
   */
  readErrors(): number;
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
  /** The person one of whose distinct ids is `distinctId` (stored properties), if captured. */
  personByDistinctId(projectId: number, distinctId: string): NodePerson | undefined;
  /** A group's stored properties. */
  group(projectId: number, groupTypeIndex: number, groupKey: string): NodeGroup | undefined;
  /** Experience-continuity hash-key overrides of a person (by person id): flag key → hash key. */
  hashKeyOverrides(projectId: number, personId: string): Record<string, string>;
  /**
   * Subscribes to committed writes of THIS store instance: `projectIds` are the projects the
   * batch touched (null = a cluster-wide entity: organization or personal API key); after a
   * snapshot swap it holds every project of the old and new state plus null. On a read-only
   * store only through {@link relayApplied}. Returns the unsubscribe function.
   */
  onApplied(listener: (revision: number, projectIds: Set<number | null>) => void): () => void;
  /**
   * Read-only stores (IO threads, http/io-threads.ts): the writer's thread reports a committed
   * write; the store drops its snapshot (the next read sees the commit) and calls its
   * {@link onApplied} listeners. @throws StoreStateError on a writable store.
   */
  relayApplied(revision: number, projectIds: Set<number | null>): void;
  /** The environment's size on disk (`data.mdb`), its map size and its resident pages, in bytes (/metrics). */
  storage(): EnvironmentFigures;
  /** Closes the environment (waits for queued writes). */
  close(): Promise<void>;
}

/** The writer's side, used by the Watch client. Every method throws on a read-only store. */
export interface WritableNodeStore extends NodeStore {
  /** Applies tail `changes` and sets `revision`, in one transaction. */
  applyBatch(changes: readonly StoreChange[], revision: number): Promise<void>;
  /** Starts staging a snapshot begun at log revision `revision` (drops any earlier unfinished one). */
  beginSnapshot(revision: number): Promise<void>;
  /**
   * Stages snapshot entities and replayed changes into the pending generation. With `cursor`
   * the changes are one SnapshotChunk: entities not yet in the staged generation (each is sent
   * once), written without reading a previous state, and the cursor is recorded after them, so
   * {@link pendingSnapshot} never names more than is staged. @throws StoreStateError without
   * beginSnapshot.
   */
  stageSnapshot(changes: readonly StoreChange[], cursor?: Uint8Array): Promise<void>;
  /**
   * The snapshot being staged, kept across streams and restarts so it can be resumed: its begin
   * revision and the cursor of the last chunk staged (null before the first); null when none.
   */
  pendingSnapshot(): { revision: number; cursor: Uint8Array | null } | null;
  /** Swaps the staged snapshot in at `revision`: generation, revision and `complete_snapshot` in one transaction. */
  commitSnapshot(revision: number): Promise<void>;
  /** Forgets the staged snapshot; the live state is untouched. */
  abortSnapshot(): Promise<void>;
  /**
   * Writes a consistent copy of the environment to `<dir>/data.mdb` (`dir` exists and holds no
   * data.mdb; LMDB's mdb_env_copy with MDB_CP_COMPACT: free pages left out, so a file that grew
   * through many write transactions copies at about its live size), between two writes: resolves with the
   * revision the copy holds. The control plane's snapshot image (control-plane/snapshot-image).
   */
  copyTo(dir: string): Promise<{ revision: number }>;
}

/** Thrown by write methods of a read-only store or without a staged snapshot. */
export class StoreStateError extends Error {
  constructor(message: string) { super(message); this.name = 'StoreStateError'; }
}

/** Thrown when a stored entity cannot be decoded: the store's pages are damaged. */
export class StoreCorruptionError extends Error {
  constructor(message: string) { super(message); this.name = 'StoreCorruptionError'; }
}

