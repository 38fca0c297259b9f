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

/**
 * Runs one slot: autocannon with each connection cycling through its own stretch of `requests`
 * (`share` requests from its place, counted over the whole process by `next`), so the stretches
 * partition the list — the mix holds overall and autocannon prepares each body once, not once
 * per connection.
 */
function runSlot(job: WorkerJob, slot: WorkerJob['slots'][number], requests: LoadRequest[], share: number, next: () => number): Promise<unknown> {
  // autocannon accepts several URLs (connection i → url i mod n); its typings say one string.
  const opts = {
    url: slot.urls as unknown as string,
    connections: slot.connections,
    duration: job.durationS,
    timeout: job.timeoutS,
    requests: [requests[0]!],
    skipAggregateResult: true,
    setupClient: (c: autocannon.Client) => {
      const from = next() * share;
      c.setRequests(Array.from({ length: share }, (_, i) => requests[(from + i) % requests.length]!));
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
  const connections = job.slots.reduce((n, s) => n + s.connections, 0);
  const share = Math.max(1, Math.floor(requests.length / connections));
  let client = 0;
  Promise.all(job.slots.map((s) => runSlot(job, s, requests, share, () => client++))).then(
    (results) => process.send!({ results } satisfies WorkerReply, () => process.exit(0)),
    (e: unknown) => process.send!({ error: e instanceof Error ? e.message : String(e) } satisfies WorkerReply, () => process.exit(1)),
  );
});
