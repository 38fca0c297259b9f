/**
 * What the main thread hands an IO thread (workers/io-thread.ts) and the cadence they agree on
 * (http/io-threads.ts). Kept apart from the thread's entry file, which runs on import.
 */
import type { Config } from '../../config.js';

/** workerData of an IO thread. */
export interface IoThreadInit {
  config: Config;
  index: number;
  storePath: string;
  /** Port to listen on (the same for every thread). */
  port: number;
  /** The shared feed rate-limit table (SharedTokenBuckets). */
  limiter: SharedArrayBuffer;
  withCapture: boolean;
  /** The GeoIP database, read once by the main thread into a SharedArrayBuffer (null = none). */
  geoipBytes: Uint8Array | null;
  /** Fault injection for tests: the thread answers the `test:crash` call by throwing uncaught. */
  testHooks: boolean;
}

/** How often an IO thread pushes its /flags usage counts to the main thread, in ms. */
export const USAGE_PUSH_MS = 200;
