/**
 * Experience continuity, the write half on the node (research/posthog-flag-evaluation.md §2.6;
 * PostHog `set_feature_flag_hash_key_overrides`): after a /flags evaluation whose request carries
 * a `$anon_distinct_id` (≠ distinct_id) and answers continuity flags that need the hash (the
 * core's `flagsNeedingHashKeyOverrides`), the node asks the control plane to persist
 * `(person, flag) → hash_key = anon_id` for the persons of `[distinct_id, anon_id]`, where missing.
 * The first answer is already right without it (the core buckets continuity flags by the
 * request's `$anon_distinct_id`); persistence keeps later answers, without `$anon_distinct_id`,
 * and answers after `$identify` merges, on the same variant.
 *
 * The request travels as ONE hash-key override record (contract/override-records.ts)
 * appended to the durable capture outbox and shipped over gRPC `Ingest` like captured events;
 * ingestion applies it with `writeHashKeyOverridesTx` in the batch's transaction, and the new
 * override rows come back to every node through the change log.
 *
 * Best effort, never in the way of the answer: the hook runs after the answer is handed to uWS,
 * never throws, and does not wait for the append; an append failure (outbox full) is logged
 * (at most every {@link LOG_EVERY_MS}) and counted, and the answer has gone out regardless.
 *
 * Skipped when: no capture service (HTTP started alone: no recorder at all), flags disabled,
 * no or same or over-long `$anon_distinct_id`, no continuity flag needing the hash, the stored
 * overrides of distinct_id's person already cover every such flag, or the same
 * (project, distinct_id, anon_id, flag set) was enqueued within {@link DEDUPE_TTL_MS} (a bounded
 * in-memory set of {@link DEDUPE_MAX} entries, oldest evicted first), which absorbs the bursts
 * before the overrides are back in the store. After the TTL a still-uncovered request enqueues
 * again (e.g. when no person existed yet for either id when the first record was ingested:
 * PostHog, too, writes overrides only for existing persons).
 *
 * Cost on the hot path: requests without `$anon_distinct_id` pay two property reads; others one
 * `flagsNeedingHashKeyOverrides` on the IO thread's compiled project (pool mode included), a
 * person lookup and an override read.
 */
import type { Logger } from 'pino';
import type { CapturedEvent } from '../../contract/events.js';
import { hashKeyOverrideRecord } from '../../contract/override-records.js';
import type { EvaluationRequest } from '../../evaluation/index.js';
import { MAX_DISTINCT_ID_CHARS, uuidv7 } from '../capture/events.js';
import type { NodeStore } from '../store/lmdb.js';
import type { FlagsJob } from '../pool/job.js';
import { hasOwn } from '../../own-property.js';

/** How long an enqueued (project, distinct_id, anon_id, flags) is remembered, in ms. */
export const DEDUPE_TTL_MS = 5 * 60_000;
/** Most entries remembered; the oldest is evicted beyond it. */
export const DEDUPE_MAX = 10_000;
/** Append failures are logged at most this often (each one is counted). */
export const LOG_EVERY_MS = 10_000;

/** Dependencies of {@link ContinuityRecorder}. */
export interface ContinuityDeps {
  store: Pick<NodeStore, 'personByDistinctId' | 'hashKeyOverrides'>;
  /** Keys of the continuity flags of `projectId` answered for `request` that need the hash (IO thread's engine). */
  flagsNeeding(projectId: number, request: EvaluationRequest): string[];
  /** Durable append to the capture outbox (CaptureService.append). @throws OutboxFullError. */
  append(events: CapturedEvent[]): Promise<void>;
  log: Logger;
  now?: () => number;
  dedupeTtlMs?: number;
  dedupeMax?: number;
}

/** Counters of the recorder (/metrics). */
export interface ContinuityCounters {
  /** Records appended to the outbox. */
  enqueued: number;
  /** Skipped: the stored overrides already cover the flags. */
  covered: number;
  /** Skipped: enqueued recently. */
  deduplicated: number;
  /** Appends that failed (outbox full or write error). */
  failed: number;
}

/** Clips like capture does to distinct ids (code points), so ingestion finds the stored person. */
function clipDistinctId(s: string): string {
  return s.length <= MAX_DISTINCT_ID_CHARS ? s : [...s].slice(0, MAX_DISTINCT_ID_CHARS).join('');
}

/** See the module doc. */
export class ContinuityRecorder {
  readonly counters: ContinuityCounters = { enqueued: 0, covered: 0, deduplicated: 0, failed: 0 };
  /** Dedupe key → expiry (ms); Map order = insertion order, oldest first. */
  private readonly recent = new Map<string, number>();
  private lastLog = -Infinity;
  private readonly now: () => number;
  private readonly ttl: number;
  private readonly max: number;

  constructor(private readonly deps: ContinuityDeps) {
    this.now = deps.now ?? Date.now;
    this.ttl = deps.dedupeTtlMs ?? DEDUPE_TTL_MS;
    this.max = deps.dedupeMax ?? DEDUPE_MAX;
  }

  /** Entries in the dedupe set (tests). */
  get remembered(): number { return this.recent.size; }

  /** Called once per evaluated /flags request, after the answer was handed over. Never throws. */
  afterFlags(job: FlagsJob): void {
    try {
      if (job.disableFlags) return;
      const req = job.request;
      const anon = req.anon_distinct_id;
      if (typeof anon !== 'string' || anon === '' || anon.length > MAX_DISTINCT_ID_CHARS) return;
      if (typeof req.distinct_id !== 'string' || req.distinct_id === '' || anon === req.distinct_id) return;
      this.consider(job.projectId, clipDistinctId(req.distinct_id), anon, req);
    } catch (e) {
      this.logFailure(e, 'experience continuity hook failed');
    }
  }

  private consider(projectId: number, distinctId: string, anon: string, req: EvaluationRequest): void {
    const keys = this.deps.flagsNeeding(projectId, req);
    if (keys.length === 0) return;
    const person = this.deps.store.personByDistinctId(projectId, distinctId);
    if (person !== undefined) {
      const stored = this.deps.store.hashKeyOverrides(projectId, person.id);
      if (keys.every((k) => hasOwn(stored, k))) { this.counters.covered++; return; }
    }
    const now = this.now();
    const key = `${projectId}\u0000${distinctId}\u0000${anon}\u0000${[...keys].sort().join('\u0000')}`;
    const until = this.recent.get(key);
    if (until !== undefined && until > now) { this.counters.deduplicated++; return; }
    this.remember(key, now + this.ttl);
    const record = hashKeyOverrideRecord({
      uuid: uuidv7(now), projectId, distinctId, anonDistinctId: anon, flagKeys: keys, timestamp: new Date(now).toISOString(),
    });
    let appending: Promise<void>;
    try {
      appending = this.deps.append([record]);
    } catch (e) {
      appending = Promise.reject(e);
    }
    appending.then(
      () => { this.counters.enqueued++; },
      (e: unknown) => {
        this.counters.failed++;
        this.recent.delete(key); // a later request may try again
        this.logFailure(e, 'hash-key override record not enqueued');
      },
    );
  }

  private remember(key: string, until: number): void {
    this.recent.delete(key);
    this.recent.set(key, until);
    while (this.recent.size > this.max) this.recent.delete(this.recent.keys().next().value as string);
  }

  private logFailure(err: unknown, msg: string): void {
    const now = this.now();
    if (now - this.lastLog < LOG_EVERY_MS) return;
    this.lastLog = now;
    this.deps.log.warn({ err, failed: this.counters.failed }, msg);
  }

  /** Prometheus lines of the counters. */
  renderMetrics(): string {
    return renderContinuityMetrics(this.counters);
  }
}

/** Prometheus text of continuity counters (of one recorder, or summed over IO threads). */
export function renderContinuityMetrics(c: ContinuityCounters): string {
    return [
      '# HELP switchyard_node_hash_key_override_records_total Experience-continuity override records of /flags, by outcome.',
      '# TYPE switchyard_node_hash_key_override_records_total counter',
      `switchyard_node_hash_key_override_records_total{outcome="enqueued"} ${c.enqueued}`,
      `switchyard_node_hash_key_override_records_total{outcome="covered"} ${c.covered}`,
      `switchyard_node_hash_key_override_records_total{outcome="deduplicated"} ${c.deduplicated}`,
      `switchyard_node_hash_key_override_records_total{outcome="failed"} ${c.failed}`,
    ].join('\n') + '\n';
}
