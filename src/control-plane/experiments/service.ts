/**
 * The experiments service (spec/API.md §4.1 E1–E7, E10, E11; research
 * posthog-management-api.md §3.2–§3.8). Each write is ONE transaction holding the experiment,
 * its activity entry (scope `Experiment`) and, through the flag and cohort services, the flag or
 * cohort changes it makes with their own activity and change-log entries — so the flag nodes
 * serve never disagrees with the experiment.
 *
 * Lifecycle (derived from the dates): draft (no `start_date`) → running (launch: setting
 * `start_date` activates the flag) → stopped (`end_date`; the flag is left as it is). While
 * draft, `parameters` and the holdout rewrite the flag's variants, aggregation and holdout
 * groups; after launch neither the variants nor the holdout may change.
 */
import { type JsonObject, isJsonObject } from '../../json-shapes.js';
import crypto from 'node:crypto';
import type { Sql, Tx } from '../db/connect.js';
import { errors } from '../../errors.js';
import { writeActivity } from '../activity/store.js';
import { diffRecords, updateVerb } from '../activity/diff.js';
import type { FeatureFlagService } from '../feature-flags/service.js';
import * as flagStore from '../feature-flags/store.js';
import type { FlagRow } from '../feature-flags/types.js';
import type { FlagListQuery } from '../feature-flags/list-query.js';
import { serializeCohort, type CohortService } from '../cohorts/service.js';
import { getHoldout, holdoutFilters } from './holdouts.js';
import { experimentFlagFilters, variantKeys } from './flag-filters.js';
import { getSavedMetrics } from './saved-metrics.js';
import { metricFingerprint } from './metrics.js';
import { activityRecord, presentExperiments, statsMethod } from './serialize.js';
import * as store from './store.js';
import { experimentStatus, type ExperimentRow } from './types.js';
import { validateExperimentBody, type ExperimentInput } from './validate.js';

/** Activity-log scope of experiments. */
export const ACTIVITY_SCOPE = 'Experiment';
type Obj = JsonObject;

/** Python's repr of a list of strings, as PostHog's messages print it. */
function pyList(items: string[]): string {
  return `[${items.map((s) => `'${s}'`).join(', ')}]`;
}

/** Experiment operations of one project. */
export class ExperimentService {
  constructor(private readonly sql: Sql, private readonly flags: FeatureFlagService, private readonly cohorts: CohortService) {}

  /** E1. */
  async list(projectId: number, q: store.ExperimentListQuery, limit: number, offset: number): Promise<{ count: number; results: Obj[] }> {
    const { count, rows } = await store.listExperiments(this.sql, projectId, q, limit, offset);
    return { count, results: await presentExperiments(this.sql, projectId, rows) };
  }

  /** E3. @throws ApiError 404 (unknown or deleted). */
  async get(projectId: number, id: number): Promise<Obj> {
    const row = await store.getExperiment(this.sql, projectId, id);
    if (!row || row.deleted) throw errors.notFound();
    return (await presentExperiments(this.sql, projectId, [row]))[0]!;
  }

  /** E2. @throws ApiError 400. */
  async create(projectId: number, userId: number, body: unknown): Promise<Obj> {
    const input = validateExperimentBody(body);
    const row = await this.sql.begin((tx) => this.createIn(tx, projectId, userId, input));
    return (await presentExperiments(this.sql, projectId, [row]))[0]!;
  }

  /** E2 inside `tx` (duplicate comes here too). */
  private async createIn(tx: Tx, projectId: number, userId: number, input: ExperimentInput): Promise<ExperimentRow> {
    if (input.name === undefined) throw errors.required('name');
    if (input.feature_flag_key === undefined) throw errors.required('feature_flag_key');
    const start = input.start_date ?? null;
    const end = input.end_date ?? null;
    if (start !== null && end !== null && start >= end) throw errors.validation('End date must be after start date', null);
    const holdout = input.holdout_id == null ? null : await getHoldout(tx, projectId, input.holdout_id);
    if (input.holdout_id != null && !holdout) throw errors.validation(`Invalid pk "${input.holdout_id}" - object does not exist.`, 'holdout_id', 'does_not_exist');

    const existing = await tx<{ id: number }[]>`SELECT id::int AS id FROM feature_flags WHERE project_id = ${projectId} AND key = ${input.feature_flag_key} AND NOT deleted`;
    let flag: FlagRow;
    if (existing[0]) {
      flag = (await flagStore.getFlag(tx, projectId, existing[0].id))!;
      const keys = variantKeys(flag.filters as Obj);
      if (keys.length < 2) throw errors.validation('Feature flag is not eligible for experiments.', null);
      if (keys[0] !== 'control') throw errors.validation('Feature flag must have control as the first variant.', null);
    } else {
      const params = input.parameters ?? null;
      const flagBody: Obj = {
        key: input.feature_flag_key, name: `Feature Flag for Experiment ${input.name}`,
        filters: experimentFlagFilters({}, params, holdoutFilters(holdout)),
        active: start !== null, creation_context: 'experiments',
      };
      if (typeof params?.ensure_experience_continuity === 'boolean') flagBody.ensure_experience_continuity = params.ensure_experience_continuity;
      flag = await this.flags.createIn(tx, projectId, userId, flagBody);
    }

    const links = await this.checkSavedMetrics(tx, projectId, input.saved_metrics_ids ?? []);
    const write: store.ExperimentWrite = {
      name: input.name, description: input.description ?? null, start_date: start, end_date: end, feature_flag_id: flag.id,
      holdout_id: holdout?.id ?? null, exposure_cohort_id: null, parameters: input.parameters ?? null, secondary_metrics: input.secondary_metrics ?? [],
      filters: input.filters ?? {}, archived: input.archived ?? false, deleted: false, type: input.type ?? 'product',
      exposure_criteria: input.exposure_criteria ?? { filterTestAccounts: true },
      metrics: input.metrics ?? [], metrics_secondary: input.metrics_secondary ?? [],
      stats_config: { ...(input.stats_config ?? {}), method: statsMethod({ stats_config: input.stats_config ?? null }) },
      only_count_matured_users: input.only_count_matured_users ?? false,
      create_in_folder: input.create_in_folder ?? null, conclusion: input.conclusion ?? null, conclusion_comment: input.conclusion_comment ?? null,
      primary_metrics_ordered_uuids: null, secondary_metrics_ordered_uuids: null,
    };
    this.fingerprint(write);
    const savedUuids = await this.savedMetricUuids(tx, projectId, links);
    write.primary_metrics_ordered_uuids = ordering('primary_metrics_ordered_uuids', input.primary_metrics_ordered_uuids, null,
      [...write.metrics.map((m) => m.uuid as string), ...savedUuids.primary]);
    write.secondary_metrics_ordered_uuids = ordering('secondary_metrics_ordered_uuids', input.secondary_metrics_ordered_uuids, null,
      [...write.metrics_secondary.map((m) => m.uuid as string), ...savedUuids.secondary]);
    const id = await store.insertExperiment(tx, projectId, userId, write);
    await store.replaceSavedMetricLinks(tx, id, links);
    const row = (await store.getExperiment(tx, projectId, id))!;
    await writeActivity(tx, {
      projectId, userId, activity: 'created', scope: ACTIVITY_SCOPE, itemId: String(id), name: row.name,
      changes: diffRecords(ACTIVITY_SCOPE, null, activityRecord(row)),
    });
    return row;
  }

  /** E4 (PATCH semantics; soft delete and restore are `deleted`). @throws ApiError 404, 400. */
  async update(projectId: number, userId: number, id: number, body: unknown): Promise<Obj> {
    const input = validateExperimentBody(body);
    const row = await this.sql.begin(async (tx) => {
      const current = await store.getExperiment(tx, projectId, id, true);
      if (!current || (current.deleted && input.deleted !== false)) throw errors.notFound();
      const flag = (await flagStore.getFlag(tx, projectId, current.feature_flag_id))!;

      const refused: string[] = [];
      if (input.type !== undefined && input.type !== current.type) refused.push('type');
      if (input.create_in_folder !== undefined && input.create_in_folder !== current.create_in_folder) refused.push('_create_in_folder');
      if (input.feature_flag_key !== undefined && input.feature_flag_key !== flag.key) refused.push('feature_flag_key');
      if (refused.length > 0) throw errors.validation(`Can't update keys: ${refused.join(', ')} on Experiment`, null);
      if (current.deleted && input.deleted === false && flag.deleted) {
        throw errors.validation('Cannot restore this experiment because its feature flag is deleted. Restore the flag first.', null);
      }

      const status = experimentStatus(current);
      const holdoutChanged = input.holdout_id !== undefined && input.holdout_id !== current.holdout_id;
      if (status !== 'draft') {
        const given = input.parameters?.feature_flag_variants;
        if (Array.isArray(given)) {
          const now = variantKeys(flag.filters as Obj);
          const next = (given as Obj[]).map((v) => String(v.key));
          if (now.length !== next.length || now.some((k, i) => k !== next[i])) throw errors.validation("Can't update feature_flag_variants on Experiment", null);
        }
        if (holdoutChanged) throw errors.validation("Can't update holdout on running Experiment", null);
      }
      const holdout = input.holdout_id == null ? null : await getHoldout(tx, projectId, input.holdout_id);
      if (input.holdout_id != null && !holdout) throw errors.validation(`Invalid pk "${input.holdout_id}" - object does not exist.`, 'holdout_id', 'does_not_exist');

      const next: store.ExperimentWrite = {
        name: input.name ?? current.name, description: input.description === undefined ? current.description : input.description,
        start_date: input.start_date === undefined ? current.start_date : input.start_date,
        end_date: input.end_date === undefined ? current.end_date : input.end_date,
        feature_flag_id: current.feature_flag_id, holdout_id: input.holdout_id === undefined ? current.holdout_id : input.holdout_id,
        exposure_cohort_id: current.exposure_cohort_id, parameters: input.parameters === undefined ? current.parameters : input.parameters,
        secondary_metrics: input.secondary_metrics ?? current.secondary_metrics, filters: input.filters ?? current.filters,
        archived: input.archived ?? current.archived, deleted: input.deleted ?? current.deleted, type: current.type,
        exposure_criteria: input.exposure_criteria === undefined ? current.exposure_criteria : input.exposure_criteria,
        metrics: input.metrics ?? current.metrics, metrics_secondary: input.metrics_secondary ?? current.metrics_secondary,
        stats_config: input.stats_config === undefined ? current.stats_config : { ...(input.stats_config ?? {}), method: statsMethod({ stats_config: input.stats_config }) },
        only_count_matured_users: input.only_count_matured_users ?? current.only_count_matured_users,
        create_in_folder: current.create_in_folder, conclusion: input.conclusion === undefined ? current.conclusion : input.conclusion,
        conclusion_comment: input.conclusion_comment === undefined ? current.conclusion_comment : input.conclusion_comment,
        primary_metrics_ordered_uuids: current.primary_metrics_ordered_uuids, secondary_metrics_ordered_uuids: current.secondary_metrics_ordered_uuids,
      };
      if (next.start_date !== null && next.end_date !== null && next.start_date >= next.end_date) throw errors.validation('End date must be after start date', null);
      if (next.end_date !== null && next.start_date === null) throw errors.validation('An experiment cannot end before it starts: set start_date too.', 'end_date');
      this.fingerprint(next);

      const links = input.saved_metrics_ids !== undefined ? await this.checkSavedMetrics(tx, projectId, input.saved_metrics_ids) : null;
      const savedUuids = await this.savedMetricUuids(tx, projectId, links ?? (await store.savedMetricLinks(tx, [id])).get(id)?.map((l) => ({ id: l.saved_metric_id, metadata: l.metadata })) ?? []);
      next.primary_metrics_ordered_uuids = ordering('primary_metrics_ordered_uuids', input.primary_metrics_ordered_uuids, current.primary_metrics_ordered_uuids,
        [...next.metrics.map((m) => m.uuid as string), ...savedUuids.primary]);
      next.secondary_metrics_ordered_uuids = ordering('secondary_metrics_ordered_uuids', input.secondary_metrics_ordered_uuids, current.secondary_metrics_ordered_uuids,
        [...next.metrics_secondary.map((m) => m.uuid as string), ...savedUuids.secondary]);

      // The flag follows the experiment (research §3.3).
      const flagPatch: Obj = {};
      if (status === 'draft' && !flag.deleted && (input.parameters !== undefined || holdoutChanged)) {
        const current = flag.filters as Obj;
        const kept = { holdout: (current.holdout as Obj | undefined) ?? null, holdout_groups: (current.holdout_groups as Obj[] | undefined) ?? null };
        const hold = holdoutChanged ? holdoutFilters(holdout) : kept;
        const filters = input.parameters !== undefined ? experimentFlagFilters(current, next.parameters, hold) : { ...current, ...hold };
        flagPatch.filters = filters;
      }
      if (status === 'draft' && next.start_date !== null && !flag.active && !flag.deleted) flagPatch.active = true; // launch
      if (Object.keys(flagPatch).length > 0) await this.flags.updateIn(tx, projectId, userId, flag.id, flagPatch);

      await store.updateExperiment(tx, id, next);
      if (links !== null) await store.replaceSavedMetricLinks(tx, id, links);
      const updated = (await store.getExperiment(tx, projectId, id))!;
      const changes = diffRecords(ACTIVITY_SCOPE, activityRecord(current), activityRecord(updated));
      if (changes.length > 0) {
        await writeActivity(tx, {
          projectId, userId, activity: updateVerb(changes), scope: ACTIVITY_SCOPE, itemId: String(id), name: updated.name, changes,
        });
      }
      return updated;
    });
    return (await presentExperiments(this.sql, projectId, [row]))[0]!;
  }

  /**
   * E7: a draft copy named `<name> (Copy)` (then ` (Copy) 1`, ` 2`, … while taken), on the same
   * flag unless `feature_flag_key` names another (an existing flag lends its variants).
   * @throws ApiError 404, 400.
   */
  async duplicate(projectId: number, userId: number, id: number, body: unknown): Promise<Obj> {
    const b = isJsonObject(body) ? body : {};
    const row = await this.sql.begin(async (tx) => {
      const source = await store.getExperiment(tx, projectId, id);
      if (!source || source.deleted) throw errors.notFound();
      const sourceFlag = (await flagStore.getFlag(tx, projectId, source.feature_flag_id))!;
      const key = typeof b.feature_flag_key === 'string' && b.feature_flag_key.trim() !== '' ? b.feature_flag_key.trim() : sourceFlag.key;
      let parameters = source.parameters ? structuredClone(source.parameters) : null;
      if (key !== sourceFlag.key) {
        const [other] = await tx<{ filters: Obj }[]>`SELECT filters FROM feature_flags WHERE project_id = ${projectId} AND key = ${key} AND NOT deleted`;
        const variants = (other?.filters.multivariate as Obj | undefined)?.variants;
        if (Array.isArray(variants)) parameters = { ...(parameters ?? {}), feature_flag_variants: variants };
      }
      const base = typeof b.name === 'string' && b.name.trim() !== '' ? b.name.trim() : `${source.name} (Copy)`;
      let name = base;
      for (let n = 1; await store.nameTaken(tx, projectId, name); n++) name = `${base} ${n}`;
      // New uuids for the copied metrics; the ordering arrays follow them.
      const renamed = new Map<string, string>();
      const copy = (ms: Obj[]) => ms.map((m) => {
        const uuid = crypto.randomUUID();
        renamed.set(String(m.uuid), uuid);
        const { fingerprint: _f, ...rest } = m;
        return { ...structuredClone(rest), uuid };
      });
      const metrics = copy(source.metrics);
      const metricsSecondary = copy(source.metrics_secondary);
      const remap = (list: string[] | null) => list?.map((u) => renamed.get(u) ?? u) ?? undefined;
      const links = (await store.savedMetricLinks(tx, [id])).get(id) ?? [];
      const input: ExperimentInput = {
        name, description: source.description, feature_flag_key: key, parameters, filters: source.filters, type: source.type,
        exposure_criteria: source.exposure_criteria, metrics, metrics_secondary: metricsSecondary, stats_config: source.stats_config,
        only_count_matured_users: source.only_count_matured_users,
        secondary_metrics: source.secondary_metrics, holdout_id: source.holdout_id,
        saved_metrics_ids: links.map((l) => ({ id: l.saved_metric_id, metadata: l.metadata })),
        primary_metrics_ordered_uuids: remap(source.primary_metrics_ordered_uuids),
        secondary_metrics_ordered_uuids: remap(source.secondary_metrics_ordered_uuids),
      };
      return this.createIn(tx, projectId, userId, input);
    });
    return (await presentExperiments(this.sql, projectId, [row]))[0]!;
  }

  /**
   * E6: a dynamic behavioural cohort of everyone who saw the experiment's flag since its start
   * (`$feature_flag_called` with `$feature_flag` = the key, or the custom exposure event).
   * @throws ApiError 404, 400 (draft, or already has one).
   */
  async createExposureCohort(projectId: number, userId: number, id: number): Promise<Obj> {
    const cohort = await this.sql.begin(async (tx) => {
      const exp = await store.getExperiment(tx, projectId, id, true);
      if (!exp || exp.deleted) throw errors.notFound();
      const flag = await flagStore.getFlag(tx, projectId, exp.feature_flag_id);
      if (!flag) throw errors.validation('Experiment does not have a feature flag', null);
      if (exp.start_date === null) throw errors.validation('Experiment does not have a start date', null);
      if (exp.exposure_cohort_id !== null) throw errors.validation('Experiment already has an exposure cohort', null);
      let key = '$feature_flag_called';
      let eventFilters: Obj[] = [{ key: '$feature_flag', value: [flag.key], operator: 'exact', type: 'event' }];
      const custom = exp.parameters?.custom_exposure_filter;
      if (isJsonObject(custom)) {
        const entity = (Array.isArray(custom.events) ? custom.events[0] : undefined) as Obj | undefined;
        if (Array.isArray(custom.actions) && custom.actions.length > 0 && !entity) throw errors.validation('Actions are not supported as exposure events.', null);
        if (entity && typeof entity.id === 'string') {
          key = entity.id;
          eventFilters = (Array.isArray(entity.properties) ? entity.properties as Obj[] : []).filter((p) => ['event', 'feature', 'element', 'hogql'].includes(String(p.type ?? 'event')));
        }
      }
      const created = await this.cohorts.createIn(tx, projectId, userId, {
        name: `Users exposed to experiment "${exp.name}"`, is_static: false,
        filters: { properties: { type: 'OR', values: [{ type: 'OR', values: [{
          type: 'behavioral', value: 'performed_event', key, negation: false, event_type: 'events', event_filters: eventFilters,
          explicit_datetime: exp.start_date.toISOString(),
        }] }] } },
      }, { calculating: true });
      await tx`UPDATE experiments SET exposure_cohort_id = ${created.id}, updated_at = now() WHERE id = ${id}`;
      await writeActivity(tx, {
        projectId, userId, activity: 'updated', scope: ACTIVITY_SCOPE, itemId: String(id), name: exp.name,
        changes: [{ type: ACTIVITY_SCOPE, action: 'changed', field: 'exposure_cohort', before: null, after: created.id }],
      });
      return created;
    });
    this.cohorts.recalculate(projectId, cohort);
    return { cohort: serializeCohort({ ...cohort, experiment_set: [id] }) };
  }

  /** E10: live flags an experiment may use. */
  async eligibleFlags(projectId: number, q: FlagListQuery, limit: number, offset: number): Promise<{ results: Obj[]; count: number }> {
    const { count, rows } = await flagStore.listFlags(this.sql, projectId, { ...q, eligibleForExperiments: true }, limit, offset);
    return { results: await this.flags.presentRows(this.sql, projectId, rows) as unknown as Obj[], count };
  }

  /**
   * E11: `true` when no recent event of the given ones (≤ 20 per event, last 7 days) carries a
   * `$feature/…` property — the flag is probably not called in code yet (also true with no events).
   */
  async requiresFlagImplementation(projectId: number, eventNames: string[]): Promise<{ result: boolean }> {
    for (const event of eventNames) {
      const rows = await this.sql<{ properties: Obj }[]>`SELECT properties FROM events WHERE project_id = ${projectId} AND event = ${event}
        AND timestamp > now() - interval '7 days' ORDER BY timestamp DESC LIMIT 20`;
      if (rows.some((r) => Object.keys(r.properties).some((k) => k.startsWith('$feature/')))) return { result: false };
    }
    return { result: true };
  }

  /** Stamps each metric with its fingerprint under the experiment's settings. */
  private fingerprint(w: store.ExperimentWrite): void {
    const method = statsMethod(w);
    for (const m of [...w.metrics, ...w.metrics_secondary]) m.fingerprint = metricFingerprint(m, w.start_date, method, w.exposure_criteria, w.only_count_matured_users);
  }

  /** Checks saved-metric links belong to the project. @throws ApiError 400 attr saved_metrics_ids. */
  private async checkSavedMetrics(tx: Tx, projectId: number, links: { id: number; metadata: Obj }[]): Promise<{ id: number; metadata: Obj }[]> {
    const found = await getSavedMetrics(tx, projectId, links.map((l) => l.id));
    for (const l of links) {
      if (!found.has(l.id)) throw errors.validation('Saved metric does not exist or does not belong to this project', 'saved_metrics_ids');
    }
    return links;
  }

  /** Uuids of linked saved metrics by role (a link without a type counts as primary). */
  private async savedMetricUuids(tx: Tx, projectId: number, links: { id: number; metadata: Obj }[]): Promise<{ primary: string[]; secondary: string[] }> {
    const found = await getSavedMetrics(tx, projectId, links.map((l) => l.id));
    const out = { primary: [] as string[], secondary: [] as string[] };
    for (const l of links) {
      const uuid = found.get(l.id)?.query.uuid;
      if (typeof uuid === 'string') (l.metadata.type === 'secondary' ? out.secondary : out.primary).push(uuid);
    }
    return out;
  }
}

/**
 * An ordering array (research §3.2 step 5): when the client sent one it must cover every metric
 * uuid; otherwise the stored order is kept, uuids that are gone are dropped and new ones appended.
 * @throws ApiError 400 naming the missing uuids.
 */
function ordering(field: string, given: string[] | null | undefined, stored: string[] | null, required: string[]): string[] | null {
  if (given !== undefined) {
    if (given === null) {
      if (required.length > 0) throw errors.validation(`${field} is null but ${field.startsWith('primary') ? 'primary' : 'secondary'} metrics exist. This is likely a frontend bug - please refresh and try again.`, null);
      return null;
    }
    const missing = required.filter((u) => !given.includes(u));
    if (missing.length > 0) throw errors.validation(`${field} is missing UUIDs: ${pyList(missing)}. This is likely a frontend bug - please refresh and try again.`, null);
    return given;
  }
  const kept = (stored ?? []).filter((u) => required.includes(u));
  for (const u of required) if (!kept.includes(u)) kept.push(u);
  return kept;
}
