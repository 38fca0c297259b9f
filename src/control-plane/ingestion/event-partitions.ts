/**
 * Monthly partitions of `events` (migration 0015): created on demand before a
 * batch is inserted, and dropped whole by retention.
 *
 * Layout: `events_old` holds every timestamp before {@link PARTITIONED_FROM}; from there one
 * partition per UTC month, `events_yYYYYmMM`, covering [first instant of the month, first
 * instant of the next). Capture bounds timestamps (years 0…9999, at most 23 h ahead:
 * eval-node/capture/events.ts), so at most one partition per month since 2020 can exist.
 *
 * `person_event_times` (migration 0017: the per-person event times ingestion keeps beside the
 * events) is partitioned the same way, `person_event_times_old` and `person_event_times_yYYYYmMM`
 * ({@link timesPartitionOf}); each month's pair is created and dropped together.
 *
 * Retention ({@link dropExpiredEventPartitions}): a month is dropped once ALL of it is older than
 * the cutoff = the earlier of now − `retentionDays` and 30 days (the longest CUPED lookback)
 * before the start of any experiment that is neither deleted nor archived. Dropping is
 * `DETACH PARTITION … CONCURRENTLY` then `DROP TABLE`: readers are not blocked, and no row is
 * deleted one by one.
 */
import type { Sql, Tx } from '../db/connect.js';

/** Timestamps before this go to `events_old`. */
export const PARTITIONED_FROM = Date.UTC(2020, 0, 1);
/** Days before an experiment's start that its analysis may read (CUPED lookback, at most 30). */
export const EXPERIMENT_LOOKBACK_DAYS = 30;
/** Advisory lock key serialising partition creation and dropping (arbitrary constant). */
export const PARTITION_LOCK_KEY = 7_302_114_015;

const DAY_MS = 24 * 60 * 60 * 1000;

/** A partition: its table name and the bounds it covers, as ISO instants (`from` null = no lower bound). */
export interface MonthPartition { readonly name: string; readonly from: string | null; readonly to: string }

/** The `events_old` partition (every timestamp before {@link PARTITIONED_FROM}). */
const OLD_PARTITION: MonthPartition = Object.freeze({ name: 'events_old', from: null, to: new Date(PARTITIONED_FROM).toISOString() });
/** Month partitions already described, by UTC month number (year · 12 + month): ingestion asks per event. */
const MONTHS = new Map<number, MonthPartition>();
/** Months {@link MONTHS} keeps before starting over (capture bounds timestamps, so few are live). */
const MONTHS_KEPT = 1024;

/**
 * The partition holding `t`: its month's, or `events_old`. The result is shared (frozen): two
 * ISO strings per event cost ~5 µs of an ingestion batch's JS time before it was cached.
 */
export function monthPartition(t: Date): MonthPartition {
  if (t.getTime() < PARTITIONED_FROM) return OLD_PARTITION;
  const y = t.getUTCFullYear();
  const m = t.getUTCMonth();
  const k = y * 12 + m;
  let p = MONTHS.get(k);
  if (p === undefined) {
    if (MONTHS.size >= MONTHS_KEPT) MONTHS.clear();
    p = Object.freeze({
      name: `events_y${String(y).padStart(4, '0')}m${String(m + 1).padStart(2, '0')}`,
      from: new Date(Date.UTC(y, m, 1)).toISOString(),
      to: new Date(Date.UTC(y, m + 1, 1)).toISOString(),
    });
    MONTHS.set(k, p);
  }
  return p;
}

/** The `person_event_times` partition of the same month as the events partition `name` (`events_y2026m11` → `person_event_times_y2026m11`). */
export function timesPartitionOf(name: string): string {
  return `person_event_times${name.slice('events'.length)}`;
}

/** Names of the tables attached to `parent` as partitions. */
const ATTACHED_TO = (sql: Sql | Tx, parent: 'events' | 'person_event_times') => sql<{ name: string }[]>`
  SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = ${parent}::regclass ORDER BY c.relname`;
/** Names of the tables attached to `events` as partitions. */
const ATTACHED = (sql: Sql | Tx) => ATTACHED_TO(sql, 'events');

/**
 * The attached partitions that can hold a timestamp in `[from, to]`, oldest first (the names
 * sort chronologically: `events_old`, then `events_yYYYYmMM`). Empty when `from` > `to`. Lets
 * a query probe each month's table itself (experiment funnels: no run-time partition pruning
 * per probe, and an order of its choosing across months).
 */
export async function eventPartitionsBetween(sql: Sql | Tx, from: Date, to: Date): Promise<string[]> {
  if (from > to) return [];
  const lo = monthPartition(from).name;
  const hi = monthPartition(to).name;
  return (await ATTACHED(sql)).map((r) => r.name).filter((n) => n >= lo && n <= hi);
}

/**
 * Creates the partitions `timestamps` need that are not attached yet, of `events` and of
 * `person_event_times` alike: one catalog query, and for a missing month a short transaction of
 * its own under {@link PARTITION_LOCK_KEY}, so the lock DDL takes on the parent is never held by
 * an ingestion transaction. A table of that name left detached by an interrupted drop (expired
 * data) is dropped first.
 * @throws the driver's error when Postgres fails.
 */
export async function ensureEventPartitions(sql: Sql, timestamps: Iterable<Date>): Promise<void> {
  const needed = new Map<string, MonthPartition>();
  for (const t of timestamps) {
    const p = monthPartition(t);
    if (!needed.has(p.name)) needed.set(p.name, p);
  }
  if (needed.size === 0) return;
  const attached = new Set([...await ATTACHED(sql), ...await ATTACHED_TO(sql, 'person_event_times')].map((r) => r.name));
  for (const p of needed.values()) {
    const tables = ([[p.name, 'events'], [timesPartitionOf(p.name), 'person_event_times']] as const).filter(([name]) => !attached.has(name));
    if (tables.length === 0) continue;
    await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${PARTITION_LOCK_KEY})`;
      for (const [name, parent] of tables) {
        const [c] = await tx<{ partition: boolean }[]>`SELECT relispartition AS partition FROM pg_class WHERE relname = ${name} AND relkind IN ('r', 'p')`;
        if (c?.partition) continue; // attached meanwhile by another process
        if (c) await tx.unsafe(`DROP TABLE ${name}`);
        const from = p.from === null ? 'MINVALUE' : `('${p.from}')`;
        await tx.unsafe(`CREATE TABLE ${name} PARTITION OF ${parent} FOR VALUES FROM ${from} TO ('${p.to}')`);
      }
    });
  }
}

/**
 * The instant before which events may go (module doc), or null when nothing may: no retention.
 * `now` in ms since the epoch.
 */
export async function retentionCutoff(sql: Sql, retentionDays: number | null, now: number): Promise<Date | null> {
  if (retentionDays === null) return null;
  const [x] = await sql<{ start: Date | null }[]>`
    SELECT min(start_date) AS start FROM experiments WHERE start_date IS NOT NULL AND NOT deleted AND NOT archived`;
  let cutoff = now - retentionDays * DAY_MS;
  if (x?.start) cutoff = Math.min(cutoff, x.start.getTime() - EXPERIMENT_LOOKBACK_DAYS * DAY_MS);
  return new Date(cutoff);
}

/**
 * The span an `events` or `person_event_times` partition covers, in ms since the epoch: a
 * month's [`start`, `end`), or for `…_old` everything before {@link PARTITIONED_FROM} (`start`
 * null: many months). Null for another name.
 */
function partitionSpan(name: string): { start: number | null; end: number } | null {
  const m = /^(?:events|person_event_times)_(?:y(\d{4})m(\d{2})|(old))$/.exec(name);
  if (!m) return null;
  if (m[3]) return { start: null, end: PARTITIONED_FROM };
  return { start: Date.UTC(Number(m[1]), Number(m[2]) - 1, 1), end: Date.UTC(Number(m[1]), Number(m[2]), 1) };
}

/** The first instant of the month a partition `events_yYYYYmMM` covers; null for `events_old` (many months) or another name. */
export function monthOfPartition(name: string): Date | null {
  const start = partitionSpan(name)?.start;
  return start === undefined || start === null ? null : new Date(start);
}

/**
 * Drops every partition entirely before the retention cutoff ({@link retentionCutoff}), each
 * month's `person_event_times` partition with its events partition; resolves with the events
 * partitions' names dropped (none when `retentionDays` is null).
 * @throws the driver's error when Postgres fails (partitions dropped before stay dropped).
 */
export async function dropExpiredEventPartitions(sql: Sql, retentionDays: number | null, now: number = Date.now()): Promise<string[]> {
  const cutoff = await retentionCutoff(sql, retentionDays, now);
  if (cutoff === null) return [];
  const dropped: string[] = [];
  for (const parent of ['events', 'person_event_times'] as const) {
    for (const { name } of await ATTACHED_TO(sql, parent)) {
      const end = partitionSpan(name)?.end;
      if (end === undefined || end > cutoff.getTime()) continue;
      // DETACH … CONCURRENTLY (not allowed inside a transaction) waits for readers instead of
      // blocking them. A batch that needs the month meanwhile fails once and is retried; its retry
      // attaches a new partition (ensureEventPartitions).
      await sql.unsafe(`ALTER TABLE ${parent} DETACH PARTITION ${name} CONCURRENTLY`);
      await sql.unsafe(`DROP TABLE ${name}`);
      if (parent === 'events') dropped.push(name);
    }
  }
  return dropped;
}
