/**
 * Piscina worker for /flags (src/eval-node/pool): opens the node's LMDB environment read-only,
 * keeps its own compiled-project cache (checked against the definitions revision once per batch)
 * and answers a batch of jobs with their serialized bodies. Never throws: a job that fails
 * unexpectedly answers null and the IO thread replies 500.
 */
import { workerData } from 'node:worker_threads';
import { openNodeStore } from '../src/eval-node/store/lmdb.js';
import { geoipFromBytes, NO_GEOIP } from '../src/eval-node/geoip/index.js';
import { FlagsEngine } from '../src/eval-node/pool/engine.js';
import type { WorkerInit } from '../src/eval-node/pool/index.js';
import type { FlagsJob, JobAnswer } from '../src/eval-node/pool/job.js';

const init = workerData as WorkerInit;
const store = openNodeStore(init.storePath, { readOnly: true });
const engine = new FlagsEngine(store, init.geoipBytes ? geoipFromBytes(init.geoipBytes) : NO_GEOIP, false);

/** Evaluates one micro-batch (all jobs of one IO-thread turn, or a share of it). */
export default function evaluateBatch(jobs: FlagsJob[]): JobAnswer[] {
  engine.beginBatch();
  const now = Date.now();
  const out: JobAnswer[] = new Array(jobs.length);
  for (let i = 0; i < jobs.length; i++) out[i] = engine.run(jobs[i]!, now);
  return out;
}
