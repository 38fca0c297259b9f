/**
 * Collects the entity changes of one ingestion transaction and turns them into change-log
 * entries at its end, so that a person touched by 500 events of a batch costs one entry.
 *
 * Order of the entries (all in one append, the transaction's last statement):
 *   1. group-type mappings (a node must know a type before groups of it),
 *   2. deletes of merged-away persons and of their hash-key overrides,
 *   3. person upserts (final state: properties and every distinct id),
 *   4. hash-key override upserts, 5. group upserts.
 * Deletes come before upserts so that a node which drops a deleted person's distinct-id index
 * entries never drops ones that the surviving person's upsert has just claimed.
 */
import type { Tx } from '../db/connect.js';
import { appendChanges, type ChangeInput } from '../change-log/store.js';
import {
  groupEntityId, groupTypeMappingId, hashKeyOverrideEntityId, personEntity,
  type GroupEntity, type GroupTypeMappingEntity, type HashKeyOverrideEntity, type PersonEntity,
} from '../../contract/entities.js';

/** Pending changes of one transaction. */
export class ChangeSet {
  /** persons.id of persons whose state changed (created, properties, distinct ids). */
  readonly persons = new Set<number>();
  /** uuid → project of persons merged away. */
  private readonly deletedPersons = new Map<string, number>();
  private readonly overrideDeletes = new Map<string, number>();
  private readonly overrideUpserts = new Map<string, HashKeyOverrideEntity>();
  private readonly groups = new Map<string, GroupEntity>();
  private readonly mappings = new Map<string, GroupTypeMappingEntity>();

  /**
   * Final states of changed persons the writer knows in full (persons it created in this
   * transaction, with every distinct id and no cohort), by persons.id: their entries are built
   * from these instead of read back from Postgres at {@link flush}.
   */
  private readonly knownPersons = new Map<number, PersonEntity>();

  /** A person (by persons.id) changed. */
  personChanged(id: number): void { this.persons.add(id); }

  /**
   * A person (by persons.id) changed and `entity` is its whole final state (see knownPersons);
   * a later {@link personChanged} without a state, or {@link forgetKnownPersons}, drops it again.
   */
  personState(id: number, entity: PersonEntity): void {
    this.persons.add(id);
    this.knownPersons.set(id, entity);
  }

  /** The state given for person `id` is no longer its final one: it is read back at flush. */
  forgetPersonState(id: number): void { this.knownPersons.delete(id); }

  /** Every state given is dropped (e.g. after a merge rewrote rows in SQL). */
  forgetKnownPersons(): void { this.knownPersons.clear(); }

  /** A person was merged into another and deleted. */
  personDeleted(id: number, uuid: string, projectId: number): void {
    this.persons.delete(id);
    this.knownPersons.delete(id);
    this.deletedPersons.set(uuid, projectId);
  }

  /** A hash-key override row was inserted. */
  overrideUpserted(o: HashKeyOverrideEntity): void {
    const id = hashKeyOverrideEntityId(o.project_id, o.person_id, o.feature_flag_key);
    this.overrideDeletes.delete(id);
    this.overrideUpserts.set(id, o);
  }

  /** A hash-key override row was deleted (its person was merged away). */
  overrideDeleted(projectId: number, personUuid: string, flagKey: string): void {
    const id = hashKeyOverrideEntityId(projectId, personUuid, flagKey);
    this.overrideUpserts.delete(id);
    this.overrideDeletes.set(id, projectId);
  }

  /** A group's properties changed (or it was created). */
  groupChanged(g: GroupEntity): void {
    this.groups.set(groupEntityId(g.project_id, g.group_type_index, g.group_key), g);
  }

  /** A group type was mapped to an index. */
  mappingCreated(m: GroupTypeMappingEntity): void {
    this.mappings.set(groupTypeMappingId(m.project_id, m.group_type_index), m);
  }

  /** True when nothing was recorded. */
  get empty(): boolean {
    return this.persons.size === 0 && this.deletedPersons.size === 0 && this.overrideDeletes.size === 0
      && this.overrideUpserts.size === 0 && this.groups.size === 0 && this.mappings.size === 0;
  }

  /**
   * Reads the final state of changed persons and appends every entry, after `first` (other
   * entities the same transaction changed, such as the cohort whose members these are). Call as
   * the last statement of the transaction (change-log/store.ts ordering invariant). Returns the
   * revisions.
   */
  async flush(tx: Tx, first: readonly ChangeInput[] = []): Promise<number[]> {
    if (this.empty && first.length === 0) return [];
    const out: ChangeInput[] = [...first];
    for (const [id, m] of this.mappings) {
      out.push({ projectId: m.project_id, kind: 'group_type_mapping', entityId: id, op: 'upsert', payload: m });
    }
    for (const [uuid, projectId] of this.deletedPersons) {
      out.push({ projectId, kind: 'person', entityId: uuid, op: 'delete', payload: null });
    }
    for (const [id, projectId] of this.overrideDeletes) {
      out.push({ projectId, kind: 'hash_key_override', entityId: id, op: 'delete', payload: null });
    }
    if (this.persons.size > 0) {
      const unknown = [...this.persons].filter((id) => !this.knownPersons.has(id));
      const rows = unknown.length === 0 ? [] : await tx<{ id: number; uuid: string; project_id: number; properties: Record<string, unknown>; distinct_ids: string[]; cohort_ids: string[] }[]>`
        SELECT p.id, p.uuid, p.project_id, p.properties,
          ARRAY(SELECT cp.cohort_id FROM cohort_people cp WHERE cp.person_id = p.id ORDER BY cp.cohort_id) AS cohort_ids,
          coalesce(array_agg(d.distinct_id) FILTER (WHERE d.distinct_id IS NOT NULL), '{}') AS distinct_ids
        FROM persons p LEFT JOIN person_distinct_ids d ON d.person_id = p.id
        WHERE p.id = ANY(${unknown}::bigint[])
        GROUP BY p.id`;
      const states: [number, PersonEntity][] = [...this.knownPersons].filter(([id]) => this.persons.has(id));
      for (const r of rows) states.push([Number(r.id), personEntity(r, r.distinct_ids)]);
      states.sort((a, b) => a[0] - b[0]);
      for (const [, e] of states) {
        out.push({ projectId: e.project_id, kind: 'person', entityId: e.id, op: 'upsert', payload: e });
      }
    }
    for (const [id, o] of this.overrideUpserts) {
      out.push({ projectId: o.project_id, kind: 'hash_key_override', entityId: id, op: 'upsert', payload: o });
    }
    for (const [id, g] of this.groups) {
      out.push({ projectId: g.project_id, kind: 'group', entityId: id, op: 'upsert', payload: g });
    }
    return appendChanges(tx, out);
  }
}
