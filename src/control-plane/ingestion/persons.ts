/**
 * Person processing, PostHog semantics (plugin-server `person-state.ts`):
 *
 * - `$process_person_profile: false` → the event touches no person; it is attributed to the
 *   existing person of its distinct id, if any.
 * - `$identify` with `$anon_distinct_id`, and `$create_alias` / `$merge_dangerously` with
 *   `alias`, first link the two distinct ids ({@link PersonBatch.link}); then, like every
 *   event, the person of `distinct_id` is created on first sight and receives `$set_once` /
 *   `$set` / `$unset`.
 * - Merging two existing persons keeps the person of `distinct_id` ("merge into"), moves the
 *   other's distinct ids, hash-key overrides and static-cohort rows to it, merges properties
 *   with the surviving person's values winning, and deletes the other. A merge is refused when
 *   the other person is already identified (except `$merge_dangerously`) or either id is one
 *   PostHog treats as illegal.
 *
 * Cost: a batch works on an in-memory copy of its persons ({@link PersonBatch}): one query loads
 * the persons of every distinct id the batch mentions, events mutate the copies, and `flush`
 * writes new persons, new distinct ids and changed persons with three bulk statements. Merges
 * (rare) flush first and then run in SQL, because they touch rows the batch never loaded.
 * Everything runs inside the batch transaction with the project lock held (locks.ts).
 */
import crypto from 'node:crypto';
import type { Tx } from '../db/connect.js';
import type { ChangeSet } from './changes.js';
import { copyJson, copyText, type CopySession } from './events-copy.js';
import { moveHashKeyOverrides } from './hash-key-overrides.js';
import { applyPropertyUpdates, hasPropertyUpdates, withinPropertiesBound, type RefusedUpdates } from './properties.js';
import type { IngestEvent, Properties } from '../../contract/events.js';
import { personEntity } from '../../contract/entities.js';

/** A person as the batch holds it; `id` is null until a new person is flushed. */
interface PersonState {
  id: number | null;
  uuid: string;
  projectId: number;
  /**
   * null until needed: a person the batch's events only name (no property update, no link) is
   * loaded without its properties ({@link PersonBatch.preload}); {@link PersonBatch.propertiesOf}
   * reads them when something turns out to need them.
   */
  properties: Properties | null;
  isIdentified: boolean;
  createdAt: Date;
  /** Every distinct id of a person created by this batch (null for one loaded from Postgres). */
  distinctIds: string[] | null;
}

/** Distinct ids PostHog never merges on, compared case-insensitively (`isDistinctIdIllegal`). */
const ILLEGAL_IDS_CI = new Set(['anonymous', 'guest', 'distinctid', 'distinct_id', 'id', 'not_authenticated', 'email',
  'undefined', 'true', 'false']);
/** Distinct ids PostHog never merges on, compared exactly. */
const ILLEGAL_IDS = new Set(['[object Object]', 'NaN', 'None', 'none', 'null', '0', 'undefined']);

/** True when `id` must not take part in a merge. */
export function isIllegalMergeId(id: string): boolean {
  const t = id.trim();
  return t.length === 0 || ILLEGAL_IDS.has(t) || ILLEGAL_IDS_CI.has(t.toLowerCase());
}

const key = (projectId: number, distinctId: string) => `${projectId}\u0000${distinctId}`;

/** The distinct id an event links to its own (`$anon_distinct_id` or `alias`), if any. */
function linkedId(ev: IngestEvent): { other: string; force: boolean } | null {
  const p = ev.properties;
  if (ev.event === '$identify' && typeof p.$anon_distinct_id === 'string') return { other: p.$anon_distinct_id, force: false };
  if ((ev.event === '$create_alias' || ev.event === '$merge_dangerously') && (typeof p.alias === 'string' || typeof p.alias === 'number')) {
    return { other: String(p.alias), force: ev.event === '$merge_dangerously' };
  }
  return null;
}

/** The persons of one ingestion batch (see module doc). */
export class PersonBatch {
  /** project+distinct id → person (null = known to have none). */
  private readonly byDistinctId = new Map<string, PersonState | null>();
  /** Distinct ids to (re)point, by project+distinct id. */
  private readonly pendingIds = new Map<string, { projectId: number; distinctId: string; person: PersonState }>();
  /** Persons created or changed since the last flush. */
  private readonly touched = new Set<PersonState>();
  /** project+distinct id of the ids Postgres was seen to have no row for (and none written since). */
  private readonly absent = new Set<string>();
  /** Uuids of the persons this batch created (fresh random uuids: no stored row names them). */
  readonly createdUuids = new Set<string>();
  /** True once a merge ran: from then on every changed person is read back at the end. */
  private merged = false;

  /**
   * With `copies`, new persons and distinct ids Postgres has no row for are written with COPY
   * ({@link flush}); without, with statements that tolerate conflicts.
   */
  constructor(private readonly tx: Tx, private readonly changes: ChangeSet, private readonly refused: RefusedUpdates = { count: 0 },
    private readonly copies: CopySession | null = null) {}

  /**
   * Loads the persons of every distinct id `events` mention, in one query: with their properties
   * only where an event updates them or links two ids (the rest, most of live traffic, only need
   * the person's uuid).
   */
  async preload(events: readonly IngestEvent[]): Promise<void> {
    const rowsIn: { p: number; d: string; n: boolean }[] = [];
    const index = new Map<string, number>();
    const add = (projectId: number, distinctId: string, needsProperties: boolean) => {
      const k = key(projectId, distinctId);
      const at = index.get(k);
      if (at !== undefined) {
        if (needsProperties) rowsIn[at]!.n = true;
        return;
      }
      index.set(k, rowsIn.length);
      rowsIn.push({ p: projectId, d: distinctId, n: needsProperties });
      this.byDistinctId.set(k, null);
      this.absent.add(k);
    };
    for (const ev of events) {
      const l = linkedId(ev);
      add(ev.projectId, ev.distinctId, l !== null || hasPropertyUpdates(ev.properties));
      if (l) add(ev.projectId, l.other, true);
    }
    if (rowsIn.length === 0) return;
    const rows = await this.tx<{ project_id: number; distinct_id: string; id: number; uuid: string; properties: Properties | null;
      is_identified: boolean; created_at: Date }[]>`
      SELECT d.project_id, d.distinct_id, p.id, p.uuid, CASE WHEN v.n THEN p.properties END AS properties, p.is_identified, p.created_at
      FROM json_to_recordset(${JSON.stringify(rowsIn)}::text::json) AS v(p bigint, d text, n boolean)
      JOIN person_distinct_ids d ON d.project_id = v.p AND d.distinct_id = v.d
      JOIN persons p ON p.id = d.person_id`;
    const byId = new Map<number, PersonState>();
    for (const r of rows) {
      let s = byId.get(r.id);
      if (!s) {
        s = { id: r.id, uuid: r.uuid, projectId: r.project_id, properties: r.properties, isIdentified: r.is_identified, createdAt: r.created_at, distinctIds: null };
        byId.set(r.id, s);
      } else if (s.properties === null) {
        s.properties = r.properties; // another of its distinct ids needed them
      }
      this.byDistinctId.set(key(r.project_id, r.distinct_id), s);
      this.absent.delete(key(r.project_id, r.distinct_id));
    }
  }

  private async find(projectId: number, distinctId: string): Promise<PersonState | null> {
    const k = key(projectId, distinctId);
    const cached = this.byDistinctId.get(k);
    if (cached !== undefined) return cached;
    const [r] = await this.tx<{ id: number; uuid: string; properties: Properties; is_identified: boolean; created_at: Date }[]>`
      SELECT p.id, p.uuid, p.properties, p.is_identified, p.created_at
      FROM person_distinct_ids d JOIN persons p ON p.id = d.person_id
      WHERE d.project_id = ${projectId} AND d.distinct_id = ${distinctId}`;
    const s = r ? { id: r.id, uuid: r.uuid, projectId, properties: r.properties, isIdentified: r.is_identified, createdAt: r.created_at, distinctIds: null } : null;
    this.byDistinctId.set(k, s);
    if (!s) this.absent.add(k);
    return s;
  }

  /** `s`'s properties, read from Postgres when the preload left them out (see PersonState). */
  private async propertiesOf(s: PersonState): Promise<Properties> {
    if (s.properties === null) {
      const [r] = await this.tx<{ properties: Properties }[]>`SELECT properties FROM persons WHERE id = ${s.id}`;
      s.properties = r?.properties ?? {};
    }
    return s.properties;
  }

  private create(projectId: number, distinctIds: string[], properties: Properties, isIdentified: boolean, createdAt: Date): PersonState {
    const s: PersonState = { id: null, uuid: crypto.randomUUID(), projectId, properties, isIdentified, createdAt, distinctIds: [] };
    this.createdUuids.add(s.uuid);
    for (const d of distinctIds) this.point(projectId, d, s);
    this.touched.add(s);
    return s;
  }

  private point(projectId: number, distinctId: string, s: PersonState): void {
    const k = key(projectId, distinctId);
    this.byDistinctId.set(k, s);
    this.pendingIds.set(k, { projectId, distinctId, person: s });
    if (s.distinctIds && !s.distinctIds.includes(distinctId)) s.distinctIds.push(distinctId);
  }

  /**
   * Links `otherId` (the anonymous id of `$identify`, the alias of `$create_alias`) to the
   * person of `intoId`, creating or merging persons as PostHog's `merge` does.
   */
  async link(projectId: number, otherId: string, intoId: string, at: Date, force: boolean): Promise<void> {
    if (otherId === intoId || isIllegalMergeId(otherId) || isIllegalMergeId(intoId)) return;
    const other = await this.find(projectId, otherId);
    const into = await this.find(projectId, intoId);
    if (other && !into) {
      this.point(projectId, intoId, other);
      other.isIdentified = true;
      this.touched.add(other);
    } else if (!other && into) {
      this.point(projectId, otherId, into);
      into.isIdentified = true;
      this.touched.add(into);
    } else if (!other && !into) {
      this.create(projectId, [intoId, otherId], {}, true, at);
    } else if (other && into && other !== into) {
      if (other.isIdentified && !force) return; // PostHog refuses to merge an already identified person
      await this.merge(other, into);
    }
  }

  /** Merges `other` into `into` in SQL (after a flush, so both rows exist); `other` is deleted. */
  private async merge(other: PersonState, into: PersonState): Promise<void> {
    await this.flush();
    // Rows move in SQL from here on: the batch no longer knows any person's whole state.
    this.changes.forgetKnownPersons();
    this.merged = true;
    const tx = this.tx;
    const from = { id: other.id!, uuid: other.uuid };
    const to = { id: into.id!, uuid: into.uuid };
    into.properties = { ...(await this.propertiesOf(other)), ...(await this.propertiesOf(into)) };
    into.createdAt = other.createdAt < into.createdAt ? other.createdAt : into.createdAt;
    into.isIdentified = true;
    await tx`UPDATE person_distinct_ids SET person_id = ${to.id} WHERE person_id = ${from.id}`;
    await moveHashKeyOverrides(tx, this.changes, into.projectId, from, to);
    await tx`INSERT INTO cohort_people (cohort_id, person_id) SELECT cohort_id, ${to.id} FROM cohort_people
      WHERE person_id = ${from.id} ON CONFLICT DO NOTHING`;
    // Events keep the uuid they were ingested with: record the merge (chains flattened) for analysis.
    await tx`UPDATE person_overrides SET override_person_uuid = ${to.uuid} WHERE project_id = ${into.projectId} AND override_person_uuid = ${from.uuid}`;
    await tx`INSERT INTO person_overrides (project_id, old_person_uuid, override_person_uuid) VALUES (${into.projectId}, ${from.uuid}, ${to.uuid})
      ON CONFLICT (project_id, old_person_uuid) DO UPDATE SET override_person_uuid = EXCLUDED.override_person_uuid`;
    await tx`DELETE FROM persons WHERE id = ${from.id}`;
    await tx`UPDATE persons SET properties = ${tx.json(into.properties as never)}, created_at = ${into.createdAt},
      is_identified = true, version = version + 1 WHERE id = ${to.id}`;
    for (const [k, v] of this.byDistinctId) if (v === other) this.byDistinctId.set(k, into);
    this.changes.personDeleted(from.id, from.uuid, other.projectId);
    this.changes.personChanged(to.id);
  }

  /**
   * Runs person processing for `ev` and returns the uuid of its person (null for a personless
   * event whose distinct id has no person).
   */
  async process(ev: IngestEvent): Promise<string | null> {
    const p = ev.properties;
    if (p.$process_person_profile === false) return (await this.find(ev.projectId, ev.distinctId))?.uuid ?? null;
    const l = linkedId(ev);
    if (l) await this.link(ev.projectId, l.other, ev.distinctId, ev.timestamp, l.force);
    const person = await this.find(ev.projectId, ev.distinctId);
    if (!person) {
      let properties: Properties = {};
      if (applyPropertyUpdates(properties, p) && !withinPropertiesBound(properties)) { this.refused.count++; properties = {}; }
      return this.create(ev.projectId, [ev.distinctId], properties, false, ev.timestamp).uuid;
    }
    if (!hasPropertyUpdates(p)) return person.uuid;
    const properties = { ...(await this.propertiesOf(person)) };
    if (applyPropertyUpdates(properties, p)) {
      if (!withinPropertiesBound(properties)) { this.refused.count++; return person.uuid; }
      person.properties = properties;
      this.touched.add(person);
    }
    return person.uuid;
  }

  /**
   * Writes new persons, distinct ids and changed persons (bulk statements, rows as one JSON text
   * each: see service.ts); records the changes. With a CopySession, new persons (ids drawn from
   * the sequence first, fresh uuids) and distinct ids Postgres had no row for are COPYed, and the
   * COPYs are settled before this resolves: under the project lock (locks.ts), which every writer
   * of persons and distinct ids takes, no other transaction can add those keys meanwhile.
   */
  async flush(): Promise<void> {
    if (this.touched.size === 0 && this.pendingIds.size === 0) return;
    const tx = this.tx;
    const fresh = [...this.touched].filter((s) => s.id === null);
    const created = new Set(fresh);
    const copies = this.copies;
    // Every flush ends with its COPYs settled, so the statements below never follow an open COPY.
    if (fresh.length > 0 && copies) {
      const ids = await tx<{ id: number }[]>`SELECT nextval(q.s::regclass) AS id
        FROM (SELECT pg_get_serial_sequence('persons', 'id') AS s) q, generate_series(1, ${fresh.length})`;
      fresh.forEach((s, i) => { s.id = ids[i]!.id; });
    } else if (fresh.length > 0) {
      const rows = await tx<{ id: number; uuid: string }[]>`
        INSERT INTO persons (uuid, project_id, properties, is_identified, created_at)
        SELECT u, p, props, ident, ca
        FROM json_to_recordset(${JSON.stringify(fresh.map((s) => ({
          u: s.uuid, p: s.projectId, props: s.properties, ident: s.isIdentified, ca: s.createdAt.toISOString(),
        })))}::text::json) AS v(u uuid, p bigint, props jsonb, ident boolean, ca timestamptz)
        RETURNING id, uuid`;
      const ids = new Map(rows.map((r) => [r.uuid, r.id]));
      for (const s of fresh) s.id = ids.get(s.uuid)!;
    }
    const existing = [...this.touched].filter((s) => s.id !== null && !created.has(s));
    if (existing.length > 0) {
      // props is null for a person whose properties the batch never read (PersonState): they stay.
      await tx`
        UPDATE persons SET properties = COALESCE(v.props, persons.properties), is_identified = v.ident, version = persons.version + 1
        FROM json_to_recordset(${JSON.stringify(existing.map((s) => ({ id: s.id, props: s.properties, ident: s.isIdentified })))}::text::json)
          AS v(id bigint, props jsonb, ident boolean)
        WHERE persons.id = v.id`;
    }
    const pending = [...this.pendingIds.entries()];
    const copied = copies ? pending.filter(([k]) => this.absent.has(k)) : [];
    const upserted = copies ? pending.filter(([k]) => !this.absent.has(k)) : pending;
    if (upserted.length > 0) {
      await tx`
        INSERT INTO person_distinct_ids (project_id, distinct_id, person_id)
        SELECT p, d, pid FROM json_to_recordset(${JSON.stringify(upserted.map(([, x]) => ({ p: x.projectId, d: x.distinctId, pid: x.person.id })))}::text::json)
          AS v(p bigint, d text, pid bigint)
        ON CONFLICT (project_id, distinct_id) DO UPDATE SET person_id = EXCLUDED.person_id`;
    }
    if (fresh.length > 0 && copies) {
      let lines = '';
      for (const s of fresh) {
        lines += `${s.id}\t${s.uuid}\t${s.projectId}\t${copyJson(s.properties)}\t${s.isIdentified ? 't' : 'f'}\t${s.createdAt.toISOString()}\n`;
      }
      await copies.copy('COPY persons (id, uuid, project_id, properties, is_identified, created_at) FROM STDIN', lines);
    }
    if (copied.length > 0) {
      let lines = '';
      for (const [, x] of copied) lines += `${x.projectId}\t${copyText(x.distinctId)}\t${x.person.id}\n`;
      await copies!.copy('COPY person_distinct_ids (project_id, distinct_id, person_id) FROM STDIN', lines);
    }
    await copies?.settle();
    for (const [k, x] of pending) {
      this.absent.delete(k);
      this.changes.personChanged(x.person.id!);
    }
    for (const s of this.touched) {
      // A person this batch created is known whole (no other distinct id, no cohort row can
      // name it before commit): its change-log entry is built from memory, not read back.
      if (created.has(s) && s.distinctIds !== null && s.properties !== null && !this.merged) {
        this.changes.personState(s.id!, personEntity({ uuid: s.uuid, project_id: s.projectId, properties: s.properties }, s.distinctIds));
      } else {
        this.changes.personChanged(s.id!);
        this.changes.forgetPersonState(s.id!);
      }
    }
    this.touched.clear();
    this.pendingIds.clear();
  }
}
