/**
 * Shared helpers of the end-to-end replays of PostHog's experiment query-runner tests
 * (query-upstream*.test.ts): journeys of upstream events go through the real ingestion
 * (`ingestEvents`, the path captured events take), experiments are made through the API and
 * queries answered by `POST /query/`.
 *
 * Frozen clocks: PostHog freezes "now" for tests that compare with it (only_count_matured_users).
 * Such vectors are replayed with every timestamp (events and experiment dates) moved by the same
 * offset so that the frozen instant lands on the real now (`shiftTo`).
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { TestControlPlane } from '../../support/control-plane.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';

/** One upstream event of a user: name, timestamp (ISO; date only or without zone = UTC), properties. */
export type Step = [event: string, timestamp: string, properties: Record<string, unknown>];
/** Users (upstream distinct ids) and their events. */
export type Journey = Record<string, Step[]>;
/** One arm of an ExperimentQueryResponse. */
export type Arm = Record<string, any>;

/** Milliseconds of an upstream timestamp. */
export function ms(ts: string): number {
  return Date.parse(/Z$|[+-]\d\d:\d\d$/.test(ts) ? ts : ts.length === 10 ? `${ts}T00:00:00Z` : `${ts}Z`);
}

/** `ts` moved by `offset` ms, as ISO. */
export const shifted = (ts: string, offset: number): string => new Date(ms(ts) + offset).toISOString();

/** The offset that moves the frozen instant `frozen` of an upstream test onto the real now. */
export const shiftTo = (frozen: string): number => Date.now() - ms(frozen);

/** An upstream `$feature_flag_called` of `flag` for `variant`, with the `$feature/<flag>` property the tests send. */
export const exposure = (flag: string, variant: string, ts: string, extra: Record<string, unknown> = {}): Step =>
  ['$feature_flag_called', ts, { $feature_flag: flag, $feature_flag_response: variant, [`$feature/${flag}`]: variant, ...extra }];

/** The upstream tests' experiment: started at the frozen "now", ending 14 days later (base.py create_experiment). */
export const fourteenDays = (start: string): string => new Date(ms(start) + 14 * 86_400_000).toISOString();

/** Ingests the journeys, each distinct id prefixed with `prefix:` and every timestamp moved by `offset` ms. */
export async function ingest(t: TestControlPlane, prefix: string, journeys: Journey, offset = 0): Promise<void> {
  const events = Object.entries(journeys).flatMap(([d, list]) => list.map(([event, ts, properties]) => ({
    uuid: crypto.randomUUID(), project_id: t.projectId, distinct_id: `${prefix}:${d}`, event, timestamp: shifted(ts, offset), properties,
  })));
  for (let i = 0; i < events.length; i += 500) await ingestEvents(t.db.sql, events.slice(i, i + 500));
}

/** Creates an experiment on a new flag `flag` (control/test 50/50 unless `extra.parameters` says otherwise); 201 asserted. */
export async function experiment(t: TestControlPlane, flag: string, start: string, end: string, extra: Record<string, unknown> = {}): Promise<{ id: number; feature_flag: Record<string, unknown> }> {
  const r = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: flag, feature_flag_key: flag, start_date: start, end_date: end, ...extra } });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

/** `POST /query/` with `q`; 200 asserted; the response body. */
export async function query(t: TestControlPlane, q: Record<string, unknown>): Promise<any> {
  const r = await t.request('POST', `/api/projects/${t.projectId}/query/`, { body: { query: q } });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** The arm `key` of an ExperimentQueryResponse. */
export function arm(r: any, key: string): Arm {
  const a = [r.baseline, ...r.variant_results].find((x: Arm) => x.key === key);
  assert.ok(a, `no arm ${key}`);
  return a;
}

/** Asserts each listed field of each arm (numbers within 1e-9). */
export function expectArms(r: any, expected: Record<string, Record<string, number | number[]>>): void {
  for (const [key, fields] of Object.entries(expected)) {
    const a = arm(r, key);
    for (const [field, want] of Object.entries(fields)) {
      if (Array.isArray(want)) assert.deepEqual(a[field], want, `${key}.${field}`);
      else assert.ok(typeof a[field] === 'number' && Math.abs(a[field] - want) < 1e-9, `${key}.${field}: ${a[field]} vs ${want}`);
    }
  }
}

/** Names an upstream source in a test title. */
export const cite = (s: { file: string; commit: string }): string => `${s.file} @ ${s.commit}`;
