/**
 * When the node hands back the memory bulk work left behind. Once its writes
 * have gone quiet after bulk work (at least `minWork` units: entities staged for a snapshot,
 * changes applied, capture entries appended or drained), and at most once per `minIntervalMs`,
 * the node collects garbage in every thread (gc.ts: Buffers held by dead objects are freed),
 * releases every mapping of its LMDB files (mapped-pages.ts) and trims the malloc arenas
 * (`malloc_trim`, libc.ts). RSS then falls back to what is read from then on (a
 * restarted node's figure) instead of keeping everything the load touched. A trickle of
 * changes triggers nothing until it adds up to `minWork`.
 *
 * Settling passes: V8 shrinks a young generation the load grew (up to 2 × 16 MiB per thread)
 * only in a GC that finds the thread's allocation throughput over the last ~5 s below ~1 MB/s,
 * which the GC right after the load never does. So {@link SETTLE_PASSES} more garbage
 * collections in every thread follow the release, each {@link SETTLE_AFTER_MS} after the
 * previous and only while no new work arrived (new work makes a later release due instead),
 * then the arenas are trimmed again. Measured (bench/scale.ts, 200,000 persons): the main
 * thread's young generation goes from 32 MiB to 1–2 MiB.
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
/**
 * Delay (ms) of each settling pass after a release (module doc): longer than V8's ~5 s window of
 * allocation throughput, so a GC then sees the quiet node's rate rather than the load's.
 */
export const SETTLE_AFTER_MS = 6_000;
/** Settling passes after a release (an early one may still fall inside a burst of reads: a scrape reads /proc/self/smaps). */
export const SETTLE_PASSES = 3;

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
  /** Delay of each settling pass (ms; module doc); default {@link SETTLE_AFTER_MS}, 0 = none. */
  settleAfterMs?: number;
  log: Logger;
}

/** A running releaser. */
export interface MemoryRelease {
  /** Releases performed since start. */
  readonly releases: number;
  /** Settling passes performed since start (module doc). */
  readonly settles: number;
  close(): void;
}

/**
 * Starts sampling `o.activity()` every `o.pollMs` and releasing by the policy of the module doc;
 * returns the counts of releases and settling passes and `close()`. With `quietMs` 0 nothing is
 * sampled. Never throws: a failing `collect` is logged, and where madvise is unavailable the
 * first release logs that and stops the sampling. The timer never keeps the process alive.
 */
export function startMemoryRelease(o: MemoryReleaseOptions): MemoryRelease {
  let releases = 0;
  let settles = 0;
  if (o.quietMs <= 0) return { get releases() { return releases; }, get settles() { return settles; }, close() {} };
  const settleAfterMs = o.settleAfterMs ?? SETTLE_AFTER_MS;
  /** Settling passes still due after the last release, and when the next one is. */
  let settlesLeft = 0;
  let settleAt = 0;
  let last = o.activity();
  let quietSince = Date.now();
  let work = 0;
  let releasedAt = 0;
  let running = false;
  const collect = async (): Promise<void> => {
    if (!o.collect) return;
    try { await o.collect(); } catch (e) { o.log.warn({ err: e }, 'garbage collection before a memory release failed'); }
    // V8 frees dead Buffers' memory on a background sweeper after the GC returns.
    await new Promise((r) => setTimeout(r, SWEEP_WAIT_MS));
  };
  const collectThenTrim = async (): Promise<void> => {
    await collect();
    loadLibc()?.mallocTrim(0);
  };
  const timer = setInterval(() => {
    if (running) return;
    const now = Date.now();
    const current = o.activity();
    const moved = current.reduce((sum, v, i) => sum + Math.abs(v - (last[i] ?? 0)), 0);
    last = current;
    if (moved > 0) {
      work += moved;
      quietSince = now;
      settlesLeft = 0;
      return;
    }
    if (settlesLeft > 0 && now >= settleAt) {
      settlesLeft--;
      settleAt = now + settleAfterMs;
      running = true;
      void (async () => {
        await collectThenTrim();
        settles++;
      })().finally(() => { running = false; });
      return;
    }
    if (work < o.minWork || now - quietSince < o.quietMs || now - releasedAt < o.minIntervalMs) return;
    work = 0;
    releasedAt = now;
    running = true;
    void (async () => {
      await collect();
      const r = releaseMappedPages(o.files);
      // The buffers the bulk work freed: glibc keeps them in its arenas unless asked.
      loadLibc()?.mallocTrim(0);
      if (!r.supported) {
        o.log.info('memory release unavailable here (needs Linux madvise and malloc_trim through koffi); stopping it');
        clearInterval(timer);
        return;
      }
      releases++;
      if (settleAfterMs > 0) {
        settlesLeft = SETTLE_PASSES;
        settleAt = Date.now() + settleAfterMs;
      }
      o.log.debug({ mappings: r.mappings, bytes: r.bytes }, 'released mapped LMDB pages after bulk work');
    })().finally(() => { running = false; });
  }, o.pollMs ?? Math.max(50, Math.floor(o.quietMs / 2)));
  timer.unref();
  return { get releases() { return releases; }, get settles() { return settles; }, close() { clearInterval(timer); } };
}
