/**
 * A `switchyard load` generator process (forked by src/load/driver.ts): receives one
 * {@link WorkerJob} over IPC, builds its request bodies, runs one autocannon instance per slot
 * (each after its start delay) with `skipAggregateResult`, and answers `{results}` — autocannon's
 * raw per-instance results, histograms encoded — or `{error}`. It exits when done or when the
 * parent goes away, so no generator outlives its run.
 */
import autocannon from 'autocannon';
import { buildRequests, type LoadRequest } from '../src/load/bodies.js';
import type { WorkerJob, WorkerReply } from '../src/load/driver.js';

/** Runs one slot: autocannon with each connection starting at its own place in `requests`. */
function runSlot(job: WorkerJob, slot: WorkerJob['slots'][number], requests: LoadRequest[]): Promise<unknown> {
  let client = 0;
  const step = Math.max(1, Math.floor(requests.length / slot.connections));
  // autocannon accepts several URLs (connection i → url i mod n); its typings say one string.
  const opts = {
    url: slot.urls as unknown as string,
    connections: slot.connections,
    duration: job.durationS,
    timeout: job.timeoutS,
    requests: [requests[0]!],
    skipAggregateResult: true,
    setupClient: (c: autocannon.Client) => {
      const off = (client++ * step) % requests.length;
      c.setRequests([...requests.slice(off), ...requests.slice(0, off)]);
    },
  } satisfies autocannon.Options & { skipAggregateResult: boolean } as autocannon.Options;
  if (slot.rate !== null) {
    opts.overallRate = slot.rate;
    // autocannon's coordinated-omission correction assumes a 1 ms send interval whatever the
    // rate, which reshapes the histogram; latencies are kept as measured (docs/load-testing.md).
    opts.ignoreCoordinatedOmission = true;
  }
  return new Promise((resolve, reject) => {
    setTimeout(() => {
      autocannon(opts, (err: Error | null, result: unknown) => (err ? reject(err) : resolve(result)));
    }, slot.delayMs);
  });
}

process.on('disconnect', () => process.exit(1));
process.once('message', (job: WorkerJob) => {
  const requests = buildRequests(job.spec, job.bodies, job.seed);
  Promise.all(job.slots.map((s) => runSlot(job, s, requests))).then(
    (results) => process.send!({ results } satisfies WorkerReply, () => process.exit(0)),
    (e: unknown) => process.send!({ error: e instanceof Error ? e.message : String(e) } satisfies WorkerReply, () => process.exit(1)),
  );
});
