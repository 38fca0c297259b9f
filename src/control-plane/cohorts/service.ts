/**
 * The cohorts service (PostHog's CohortViewSet): create, update, soft delete
 * and restore, static-cohort uploads, and the member count of dynamic cohorts. Each write is
 * ONE transaction holding the row, its activity entry (scope `Cohort`) and its change-log
 * entries — the cohort itself, and the persons whose static membership changed (their person
 * entity carries `cohort_ids`, so nodes evaluate static cohorts on `/flags`).
 *
 * Rules (PostHog, research posthog-management-api.md and CohortSerializer):
 * - a cohort may reference only live cohorts of its project, never itself through a loop, and
 *   its filters must compile for evaluation (the evaluation core's own compiler);
 * - `is_static` is fixed at creation; a CSV is accepted only by a static cohort and adds members;
 * - `DELETE` is refused (405): soft delete is `PATCH {"deleted": true}`, refused while a live
 *   flag uses the cohort;
 * - the count of a dynamic cohort is calculated after each write (`is_calculating` meanwhile),
 *   in the scan pool as a background scan (calculate.ts): one calculation of a cohort at a time,
 *   later requests folded into one waiting calculation; one past SWITCHYARD_COHORT_CALCULATION_TIMEOUT_MS
 *   stops, keeps the previous count and counts in `errors_calculating`, as a failed one does.
 */
import type { Sql, Tx } from '../db/connect.js';
import type { Logger } from '../../log.js';
import { errors } from '../../errors.js';
import { CohortTable } from '../../evaluation/cohorts.js';
import type { CohortDefinition } from '../../evaluation/types.js';
import { cohortEntity } from '../../contract/entities.js';
import type { ChangeInput } from '../change-log/store.js';
import { ChangeSet } from '../ingestion/changes.js';
import { writeActivity } from '../activity/store.js';
import { diffRecords, updateVerb } from '../activity/diff.js';
import { userBasic } from '../users/serialize.js';
import * as store from './store.js';
import { countCohortMembers } from './calculate.js';
import { scanPoolFor } from '../scan-pool/index.js';
import { hasBehavioralLeaf, referencedCohortIds, validateCohortBody } from './validate.js';
import type { CohortInput, CohortRow } from './types.js';

/** Activity-log scope of cohorts (PostHog's model name). */
export const ACTIVITY_SCOPE = 'Cohort';

/** The API shape of a cohort (PostHog's CohortSerializer). */
export function serializeCohort(row: CohortRow): Record<string, unknown> {
  return {
    id: row.id, name: row.name, description: row.description, groups: row.groups, deleted: row.deleted, filters: row.filters,
    query: row.query ?? null, is_calculating: row.is_calculating, created_by: userBasic(row.created_by),
    created_at: row.created_at.toISOString(), last_calculation: row.last_calculation?.toISOString() ?? null,
    errors_calculating: row.errors_calculating, count: row.count, is_static: row.is_static,
    cohort_type: row.is_static ? 'static' : hasBehavioralLeaf(row.filters) ? 'behavioral' : 'person_property',
    experiment_set: row.experiment_set, _create_in_folder: row.create_in_folder,
  };
}

function activityRecord(row: CohortRow): Record<string, unknown> {
  return { name: row.name, description: row.description, filters: row.filters, groups: row.groups, deleted: row.deleted, is_static: row.is_static };
}

/** Cohort operations of one project (the HTTP routes and the experiments service call these). */
export class CohortService {
  constructor(private readonly sql: Sql, private readonly log?: Logger) {}

  /** A page of live cohorts. */
  async list(projectId: number, search: string | null, limit: number, offset: number): Promise<{ count: number; results: Record<string, unknown>[] }> {
    const { count, rows } = await store.listCohorts(this.sql, projectId, search, limit, offset);
    return { count, results: rows.map(serializeCohort) };
  }

  /** One live cohort. @throws ApiError 404 (unknown or deleted). */
  async get(projectId: number, id: number): Promise<Record<string, unknown>> {
    const row = await store.getCohort(this.sql, projectId, id);
    if (!row || row.deleted) throw errors.notFound();
    return serializeCohort(row);
  }

  /** Creates a cohort from `body`. @throws ApiError 400. */
  async create(projectId: number, userId: number, body: unknown): Promise<Record<string, unknown>> {
    const row = await this.sql.begin((tx) => this.createIn(tx, projectId, userId, validateCohortBody(body, 'create')));
    this.recalculate(projectId, row);
    return serializeCohort(row);
  }

  /** Creates a cohort inside `tx` from validated `input` (the exposure cohort of an experiment comes here). */
  async createIn(tx: Tx, projectId: number, userId: number, input: CohortInput, opts: { calculating?: boolean } = {}): Promise<CohortRow> {
    const isStatic = input.is_static ?? false;
    const filters = input.filters ?? {};
    if (input.csvDistinctIds && !isStatic) throw errors.validation('A CSV can only be uploaded to a static cohort.', 'csv');
    if (!isStatic) await checkFilters(tx, projectId, null, filters);
    const id = await store.insertCohort(tx, projectId, userId, {
      name: input.name ?? '', description: input.description ?? '', filters, groups: input.groups ?? [], query: input.query,
      is_static: isStatic, create_in_folder: input.create_in_folder ?? null,
    });
    if (opts.calculating || !isStatic) await tx`UPDATE cohorts SET is_calculating = true WHERE id = ${id}`;
    const members = input.csvDistinctIds ? await store.addMembers(tx, projectId, id, input.csvDistinctIds) : [];
    const row = (await store.getCohort(tx, projectId, id))!;
    await writeActivity(tx, {
      projectId, userId, activity: 'created', scope: ACTIVITY_SCOPE, itemId: String(id), name: row.name,
      changes: diffRecords(ACTIVITY_SCOPE, null, activityRecord(row)),
    });
    await publish(tx, projectId, row, members);
    return row;
  }

  /** PATCH semantics; a CSV adds members to a static cohort. @throws ApiError 404, 400. */
  async update(projectId: number, userId: number, id: number, body: unknown): Promise<Record<string, unknown>> {
    const row = await this.sql.begin(async (tx) => {
      const current = await store.getCohort(tx, projectId, id, { forUpdate: true });
      if (!current) throw errors.notFound();
      const input = validateCohortBody(body, 'update');
      if (current.deleted && input.deleted !== false) throw errors.notFound();
      if (input.is_static !== undefined && input.is_static !== current.is_static) {
        throw errors.validation('A cohort cannot change between static and dynamic after creation.', 'is_static');
      }
      if (input.csvDistinctIds && !current.is_static) throw errors.validation('A CSV can only be uploaded to a static cohort.', 'csv');
      const next = {
        name: input.name ?? current.name, description: input.description ?? current.description,
        filters: input.filters ?? current.filters, groups: input.groups ?? current.groups,
        query: input.query === undefined ? current.query : input.query, deleted: input.deleted ?? current.deleted,
      };
      if (next.deleted && !current.deleted) {
        const flags = await store.flagsUsingCohort(tx, projectId, id);
        if (flags.length > 0) {
          throw errors.validation(`This cohort is used by feature flags: ${flags.map((f) => `${f.key} (ID: ${f.id})`).join(', ')}. `
            + 'Remove it from their release conditions first.', 'deleted');
        }
      }
      if (input.filters !== undefined && !current.is_static) await checkFilters(tx, projectId, id, next.filters);
      await store.updateCohort(tx, id, next);
      const members = input.csvDistinctIds ? await store.addMembers(tx, projectId, id, input.csvDistinctIds) : [];
      if (input.filters !== undefined && !current.is_static) await tx`UPDATE cohorts SET is_calculating = true WHERE id = ${id}`;
      const updated = (await store.getCohort(tx, projectId, id))!;
      const changes = diffRecords(ACTIVITY_SCOPE, activityRecord(current), activityRecord(updated));
      if (changes.length > 0) {
        await writeActivity(tx, {
          projectId, userId, activity: updateVerb(changes), scope: ACTIVITY_SCOPE, itemId: String(id), name: updated.name, changes,
        });
      }
      await publish(tx, projectId, updated, members);
      return updated;
    });
    this.recalculate(projectId, row);
    return serializeCohort(row);
  }

  /** A page of a static cohort's stored members (PostHog `GET /cohorts/:id/persons`). @throws ApiError 404. */
  async persons(projectId: number, id: number, limit: number, offset: number): Promise<{ count: number; results: Record<string, unknown>[] }> {
    const row = await store.getCohort(this.sql, projectId, id);
    if (!row || row.deleted) throw errors.notFound();
    const page = await store.memberPage(this.sql, id, limit, offset);
    return {
      count: page.count,
      results: page.rows.map((p) => ({ id: p.uuid, uuid: p.uuid, distinct_ids: p.distinct_ids, properties: p.properties, created_at: p.created_at.toISOString() })),
    };
  }

  /**
   * Counts a dynamic cohort's members in the scan pool (once one of the project's slots is free)
   * and stores the count, clearing `is_calculating`; a failure or the deadline leaves the count
   * as it was and counts in `errors_calculating`. Resolves when done; never rejects.
   */
  calculate(projectId: number, id: number): Promise<void> {
    return scanPoolFor(this.sql).background(projectId, `cohort:${id}`, async (scan) => {
      try {
        const [project] = await this.sql<{ timezone: string }[]>`SELECT timezone FROM projects WHERE id = ${projectId}`;
        const count = await countCohortMembers(this.sql, scan, projectId, id, project?.timezone ?? 'UTC');
        await this.sql`UPDATE cohorts SET count = ${count}, is_calculating = false, last_calculation = now() WHERE id = ${id}`;
      } catch (e) {
        this.log?.warn({ err: e, cohort_id: id }, 'cohort calculation failed');
        await this.sql`UPDATE cohorts SET is_calculating = false, errors_calculating = errors_calculating + 1 WHERE id = ${id}`.catch(() => undefined);
      }
    }).catch((e: unknown) => { this.log?.warn({ err: e, cohort_id: id }, 'cohort calculation not run'); });
  }

  /** Starts the count of a dynamic cohort after its write committed (not awaited). */
  recalculate(projectId: number, row: CohortRow): void {
    if (row.is_static || row.deleted) return;
    void this.calculate(projectId, row.id);
  }
}

/**
 * Checks what validation could not without the database: referenced cohorts exist (live, in
 * the project), no reference loop, and the filters compile. @throws ApiError 400 attr `filters`.
 */
async function checkFilters(tx: Tx, projectId: number, selfId: number | null, filters: Record<string, unknown>): Promise<void> {
  if (filters.properties === undefined) return; // no filters yet: nobody matches
  const known = await store.cohortFilters(tx, projectId);
  for (const ref of referencedCohortIds(filters)) {
    if (ref === selfId) throw errors.validation('Cohorts cannot reference other cohorts in a loop.', 'filters');
    if (!known.has(ref)) throw errors.validation(`Cohort with id ${ref} does not exist`, 'filters', 'cohort_does_not_exist');
  }
  const defs: Record<string, CohortDefinition> = {};
  for (const [id, c] of known) defs[String(id)] = { ...c.filters, is_static: c.is_static } as CohortDefinition;
  const probeId = selfId ?? 0;
  defs[String(probeId)] = filters as CohortDefinition;
  const compiled = new CohortTable(defs, 'UTC').resolve(probeId);
  if (compiled.error !== null) {
    if (compiled.error.includes('cycle')) throw errors.validation('Cohorts cannot reference other cohorts in a loop.', 'filters');
    throw errors.validation(`Invalid cohort filters: ${compiled.error}`, 'filters');
  }
}

/** Change-log entries of a cohort write: the cohort, then the persons whose membership changed. */
async function publish(tx: Tx, projectId: number, row: CohortRow, memberIds: readonly number[]): Promise<void> {
  const changes = new ChangeSet();
  for (const p of memberIds) changes.personChanged(p);
  const cohort: ChangeInput = { projectId, kind: 'cohort', entityId: String(row.id), op: 'upsert', payload: cohortEntity(row) };
  await changes.flush(tx, [cohort]);
}
