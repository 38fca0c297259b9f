/**
 * When the node hands back the memory bulk work left behind (issue 17 item 3). Once its writes
 * have gone quiet after bulk work (at least `minWork` units: entities staged for a snapshot,
 * changes applied, capture entries appended or drained), and at most once per `minIntervalMs`,
 * the node collects garbage in every thread (gc.ts: Buffers held by dead objects are freed),
 * releases every mapping of its LMDB files (mapped-pages.ts) and trims the malloc arenas
 * (`malloc_trim`, libc.ts). RSS then falls back to what is read from then on (a
 * restarted node's figure) instead of keeping everything the load touched. A trickle of
 * changes triggers nothing until it adds up to `minWork`.
 *
 * Work is sampled every `pollMs` from counters that move with writes (the caller's
 * `activity()`, e.g. [revision, entities staged, outbox entries]): the sum of their absolute
 * changes. Reads do not count, so a node that only serves /flags keeps its working set mapped.
 */
import type { Logger } from '../../log.js';
import { loadLibc } from './libc.js';
import { releaseMappedPages } from './mapped-pages.js';

/** How long after the GCs the arenas are trimmed (ms): V8 sweeps array buffers in the background. */
export const SWEEP_WAIT_MS = 250;

/** Options of {@link startMemoryRelease}. */
export interface MemoryReleaseOptions {
  /** Absolute paths of the LMDB data files whose mappings are released. */
  files: readonly string[];
  /** Counters that move with the node's writes (each may go up or down). */
  activity(): readonly number[];
  /** No change of `activity()` for this long (ms) counts as quiet. 0 disables releasing. */
  quietMs: number;
  /** Work (sum of absolute counter changes) since the last release that makes the next one due. */
  minWork: number;
  /** Fewest ms between two releases. */
  minIntervalMs: number;
  /** Runs before each release: garbage collection in every thread, so freed Buffers reach the arenas. */
  collect?: () => Promise<void> | void;
  /** How often activity is sampled (ms); default quietMs / 2. */
  pollMs?: number;
  log: Logger;
}

/** A running releaser. */
export interface MemoryRelease {
  /** Releases performed since start. */
  readonly releases: number;
  close(): void;
}

/** Starts sampling; the timer never keeps the process alive. */
export function startMemoryRelease(o: MemoryReleaseOptions): MemoryRelease {
  let releases = 0;
  if (o.quietMs <= 0) return { get releases() { return releases; }, close() {} };
  let last = o.activity();
  let quietSince = Date.now();
  let work = 0;
  let releasedAt = 0;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    const now = Date.now();
    const current = o.activity();
    const moved = current.reduce((sum, v, i) => sum + Math.abs(v - (last[i] ?? 0)), 0);
    last = current;
    if (moved > 0) {
      work += moved;
      quietSince = now;
      return;
    }
    if (work < o.minWork || now - quietSince < o.quietMs || now - releasedAt < o.minIntervalMs) return;
    work = 0;
    releasedAt = now;
    running = true;
    void (async () => {
      if (o.collect) {
        try { await o.collect(); } catch (e) { o.log.warn({ err: e }, 'garbage collection before a memory release failed'); }
        // V8 frees dead Buffers' memory on a background sweeper after the GC returns.
        await new Promise((r) => setTimeout(r, SWEEP_WAIT_MS));
      }
      const r = releaseMappedPages(o.files);
      // The buffers the bulk work freed: glibc keeps them in its arenas unless asked.
      loadLibc()?.mallocTrim(0);
      if (!r.supported) {
        o.log.info('memory release unavailable here (needs Linux madvise and malloc_trim through koffi); stopping it');
        clearInterval(timer);
        return;
      }
      releases++;
      o.log.debug({ mappings: r.mappings, bytes: r.bytes }, 'released mapped LMDB pages after bulk work');
    })().finally(() => { running = false; });
  }, o.pollMs ?? Math.max(50, Math.floor(o.quietMs / 2)));
  timer.unref();
  return { get releases() { return releases; }, close() { clearInterval(timer); } };
}
