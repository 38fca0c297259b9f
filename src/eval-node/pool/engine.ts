/**
 * The evaluator behind /flags, identical on the IO thread (inline mode) and in every pool worker:
 * a compiled-project cache plus the stages filter → properties → evaluate → serialize
 * (STYLE.md rule 5). Projects are compiled once per definitions revision (never per request) and
 * swapped whole:
 *
 * - on the IO thread the cache is `trusted`: entries stay until {@link FlagsEngine.invalidate}
 *   (wired to the store's `onApplied`) drops them, so a request costs no store read at all;
 * - in a worker (a read-only store never sees `onApplied`) each batch re-checks a project's
 *   definitions revision once (`store.definitions()` is one LMDB get when unchanged) and
 *   recompiles when it moved.
 *
 * The evaluate stage runs under the job's evaluation budget (`budgetMs`, from
 * `SWITCHYARD_EVAL_BUDGET_MS`) on budget-clock.ts' clock, inline and in the pool alike.
 */
import {
  compileProject, evaluateFlags, flagsNeedingHashKeyOverrides, requestCoversGroup, requestCoversPerson, storedPropertyUse,
  type CohortDefinition, type CompiledProject, type FlagDefinition, type ProjectDefinitions as CoreDefinitions, type StoredContext,
} from '../../evaluation/index.js';
import type { NodeStore, ProjectDefinitions } from '../store/lmdb.js';
import { DEFAULT_EVAL_BUDGET_MS } from '../../limits.js';
import { fillGeoip, type Geoip } from '../geoip/index.js';
import type { FlagsJob, JobAnswer } from './job.js';
import { EMPTY_RESULT, serializeResult, serializeResultBytes } from './respond.js';
import { evaluationBudget } from './budget-clock.js';

/** The part of the node store the engine reads. */
export type EngineStore = Pick<NodeStore, 'definitions' | 'project' | 'personByDistinctId' | 'group' | 'hashKeyOverrides'>;

interface Entry {
  revision: number;
  /** The project's property_matching_version when compiled (a project setting, outside the revision). */
  matchingVersion: number;
  compiled: CompiledProject;
  hasFeatureFlags: boolean;
  /** Some live flag has experience continuity: hash-key overrides are worth reading. */
  hasContinuity: boolean;
  /** Group type name → index (the store keys groups by index). */
  groupTypeIndex: Map<string, number>;
}

/** Store definitions → the core's feed shape (cohorts keyed by id, `{properties, is_static}`). */
export function toCoreDefinitions(defs: ProjectDefinitions, propertyMatchingVersion = 1): CoreDefinitions {
  const cohorts: Record<string, CohortDefinition> = {};
  for (const c of defs.cohorts) {
    cohorts[String(c.id)] = { ...(c.filters as object), is_static: c.is_static } as CohortDefinition;
  }
  return { flags: defs.flags as unknown as FlagDefinition[], group_type_mapping: defs.groupTypeMapping, cohorts, property_matching_version: propertyMatchingVersion };
}

/** Compiled projects and the per-request stages; see the module doc. */
export class FlagsEngine {
  private readonly cache = new Map<number, Entry>();
  /** Whether a project's definitions read any `$geoip_*` property, by definitions revision. */
  private readonly geoipUse = new Map<number, { revision: number; uses: boolean }>();
  /** Projects whose revision was checked in the current batch (untrusted mode only). */
  private readonly checked = new Set<number>();

  constructor(private readonly store: EngineStore, private readonly geoip: Geoip, private readonly trusted: boolean) {}

  /**
   * Drops the compiled projects in `projectIds` and returns those that were compiled (callers may
   * {@link warm} them). `null` (a cluster-wide change: organization or personal API key) is
   * ignored: it never changes definitions, and a snapshot swap lists every project explicitly
   * (NodeStore.onApplied).
   */
  invalidate(projectIds: Iterable<number | null>): number[] {
    const dropped: number[] = [];
    for (const id of projectIds) {
      if (id === null) continue;
      if (this.cache.delete(id)) dropped.push(id);
      this.geoipUse.delete(id);
    }
    return dropped;
  }

  /** Compiles `projectId` now (after a change) so that the next request does not pay for it. */
  warm(projectId: number): void {
    this.entry(projectId);
  }

  /**
   * Whether any flag or cohort of the project filters on a `$geoip_*` property. GeoIP properties
   * only ever influence filters (they are not echoed), so when none reads them the IO thread skips
   * reading the peer address and the lookup altogether (measured: the peer read alone was ~6 % of
   * a request's CPU). Computed once per definitions revision (a scan of the definitions' JSON).
   * Trusted engines keep the answer until {@link invalidate}; others re-check the revision.
   */
  needsGeoip(projectId: number): boolean {
    const hit = this.geoipUse.get(projectId);
    if (hit !== undefined && this.trusted) return hit.uses;
    const defs = this.store.definitions(projectId);
    if (hit !== undefined && hit.revision === defs.revision) return hit.uses;
    const uses = JSON.stringify(defs.flags).includes('"$geoip_') || JSON.stringify(defs.cohorts).includes('"$geoip_');
    this.geoipUse.set(projectId, { revision: defs.revision, uses });
    return uses;
  }

  /** Starts a batch: untrusted engines re-check each project's revision once per batch. */
  beginBatch(): void {
    this.checked.clear();
  }

  /** The compiled project, compiling on a miss or a revision change. */
  private entry(projectId: number): Entry {
    let e = this.cache.get(projectId);
    if (e !== undefined && (this.trusted || this.checked.has(projectId))) return e;
    const defs = this.store.definitions(projectId);
    const project = this.store.project(projectId);
    const matchingVersion = project?.settings?.property_matching_version === 2 ? 2 : 1;
    if (e === undefined || e.revision !== defs.revision || e.matchingVersion !== matchingVersion) {
      const timezone = project?.timezone || 'UTC';
      e = {
        revision: defs.revision,
        matchingVersion,
        compiled: compileProject(toCoreDefinitions(defs, matchingVersion), { timezone }),
        hasFeatureFlags: defs.flags.some((f) => f.active && !f.deleted),
        hasContinuity: defs.flags.some((f) => f.active && !f.deleted && f.ensure_experience_continuity),
        groupTypeIndex: new Map(Object.entries(defs.groupTypeMapping).map(([i, name]) => [name, Number(i)])),
      };
      this.cache.set(projectId, e);
    }
    if (!this.trusted) this.checked.add(projectId);
    return e;
  }

  /**
   * Keys of the continuity flags answered for `req` that need the hash (the core's
   * `flagsNeedingHashKeyOverrides`), [] for projects without continuity flags. Used on the IO
   * thread by the override-record hook (http/continuity.ts), in inline and pool modes.
   */
  continuityFlags(projectId: number, req: FlagsJob['request']): string[] {
    const e = this.entry(projectId);
    return e.hasContinuity ? flagsNeedingHashKeyOverrides(e.compiled, req) : [];
  }

  /** Definitions revision the engine evaluates `projectId` at (compiling if needed). */
  revisionOf(projectId: number): number {
    return this.entry(projectId).revision;
  }

  /**
   * Runs one job through filter → properties → evaluate → serialize. Returns null (and never
   * throws) when something unexpected failed; the caller answers 500.
   */
  run(job: FlagsJob, nowMs: number = Date.now()): string | null {
    return this.runAs(job, nowMs, false) as string | null;
  }

  /**
   * {@link run} for the IO thread: the hot shape comes back as bytes in a reused buffer (see
   * respond.ts `flagsV2Bytes`), valid until the next call; the caller sends it at once.
   */
  runBytes(job: FlagsJob, nowMs: number = Date.now()): JobAnswer {
    return this.runAs(job, nowMs, true);
  }

  private runAs(job: FlagsJob, nowMs: number, bytes: boolean): JobAnswer {
    try {
      const e = this.entry(job.projectId);
      let result = EMPTY_RESULT;
      if (!job.disableFlags) {
        // filter: runtime, evaluation environments, flag_keys and survey-only selection are
        // request fields the core applies before matching (spec §4.4 rules 2–5).
        const req = this.properties(job);
        const stored = this.stored(e, job, req);
        // evaluate: the budget starts here, after the store reads (src/evaluation/budget.ts).
        result = evaluateFlags(e.compiled, req, stored, nowMs, evaluationBudget(e.compiled, job.budgetMs ?? DEFAULT_EVAL_BUDGET_MS));
      }
      const opts = { shape: job.shape, config: job.config, requestId: job.requestId, evaluatedAt: nowMs, hasFeatureFlags: e.hasFeatureFlags };
      return bytes ? serializeResultBytes(result, opts) : serializeResult(result, opts);
    } catch {
      return null;
    }
  }

  /**
   * properties stage, stored half (spec §4.4 rule 1; research §3.1): the person's stored properties
   * (persons captured through ingestion, looked up by distinct id) unless the request asked for
   * `only_use_override_person_properties`; the stored properties of the request's groups; and the
   * person's hash-key overrides when some answered flag needs them (the core's
   * `flagsNeedingHashKeyOverrides`; writing them for `$anon_distinct_id` is the IO thread's
   * http/continuity.ts, through the capture outbox). The core lets request
   * properties override all of them. Static-cohort membership is the person's `cohort_ids`
   * (cohort_people, carried on the person entity).
   *
   * Reads are skipped when they cannot change an answer (the core's `storedPropertyUse`): the
   * person when the request (after GeoIP) supplies every person property the project's filters
   * read and no flag needs hash-key overrides; a group when the request supplies every property
   * of that group type the filters read. `req` is the request after the GeoIP fill.
   */
  private stored(e: Entry, job: FlagsJob, req: FlagsJob['request']): StoredContext {
    const use = storedPropertyUse(e.compiled);
    const skipPerson = job.onlyOverrideProperties || (!e.hasContinuity && requestCoversPerson(use, req));
    const person = skipPerson ? undefined : this.store.personByDistinctId(job.projectId, req.distinct_id);
    let groupProperties: Record<string, Record<string, unknown>> | null = null;
    if (req.groups) {
      for (const type in req.groups) {
        const index = e.groupTypeIndex.get(type);
        const key = req.groups[type];
        if (index === undefined || (typeof key !== 'string' && typeof key !== 'number')) continue;
        if (requestCoversGroup(use, req, type)) continue;
        const g = this.store.group(job.projectId, index, String(key));
        if (g !== undefined) (groupProperties ??= {})[type] = g.properties;
      }
    }
    if (person === undefined && groupProperties === null) return NO_STORED;
    return {
      person_properties: person?.properties ?? null,
      static_cohort_ids: person?.cohort_ids !== undefined && person.cohort_ids.length > 0 ? new Set(person.cohort_ids) : null,
      group_properties: groupProperties,
      hash_key_overrides: person !== undefined && e.hasContinuity && flagsNeedingHashKeyOverrides(e.compiled, req).length > 0
        ? this.store.hashKeyOverrides(job.projectId, person.id)
        : null,
    };
  }

  /**
   * properties stage, request half: GeoIP fills only person-property keys the request did not
   * supply (spec §4.4 rule 6).
   */
  private properties(job: FlagsJob): FlagsJob['request'] {
    if (job.ip === null) return job.request;
    const geo = this.geoip.lookup(job.ip);
    if (geo === null) return job.request;
    return { ...job.request, person_properties: fillGeoip(job.request.person_properties, geo) };
  }
}


/** Stored context of a request whose person and groups the node does not hold. */
const NO_STORED: StoredContext = Object.freeze({});
