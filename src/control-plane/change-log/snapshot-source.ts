/**
 * What a paged Watch snapshot is read from (control-plane/grpc/snapshot.ts): sources, each a
 * table of one entity kind read in pages in the order of an immutable key, and the cursor that
 * says where a snapshot continues ({@link SnapshotCursor}: which source, after which key).
 */
import type { Sql } from '../db/connect.js';
import type { EntityKind } from '../../contract/entities.js';

/** A source's key of one entity (its primary key columns, in order). */
export type SnapshotKey = readonly (number | string)[];

/** One entity read from a source, with its key. `projectId` null = cluster-wide. */
export interface SnapshotRow { key: SnapshotKey; kind: EntityKind; entityId: string; projectId: number | null; payload: unknown }

/** A table read in key order. */
export interface SnapshotSource {
  /** For logs. */
  name: string;
  /**
   * Up to `limit` entities with a key greater than `after` (null: from the first), in key order;
   * fewer than `limit` only at the end of the source or where a byte bound cut the page.
   * @throws the driver's error when Postgres fails.
   */
  page(sql: Sql, after: SnapshotKey | null, limit: number): Promise<SnapshotRow[]>;
}

/** Where a snapshot continues: source index and the key of the last entity sent (null = its start). */
export interface SnapshotCursor { source: number; after: SnapshotKey | null }
