/**
 * `make bench-apply`: what a node spends applying one person change from the Watch tail (target ≤ 10 CPU-µs per change), through the real path — Change message →
 * `toStoreChange` (sync/decode.ts) → `applyBatch` (store/lmdb.ts, one LMDB write transaction per
 * batch) — for new persons, then for updates that keep the distinct ids. Same-run baseline: the
 * floor of the same work, writing each payload's bytes under its key with a bare lmdb-js
 * `putSync` in one transaction per batch. Printed: CPU-µs per change (process CPU, every
 * thread) and the ratio to the baseline. Bounded: BENCH_PERSONS (100,000) persons,
 * BENCH_BATCH (500) per batch, BENCH_PROPERTIES (30) properties each, a temporary directory.
 *
 * Current figures beside their same-run floors: docs/benchmarks.md (history in git).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { open } from 'lmdb';
import { openNodeStore } from '../src/eval-node/store/lmdb.js';
import { toStoreChange } from '../src/eval-node/sync/decode.js';
import { encodePayload } from '../src/contract/payload.js';
import { personEntity } from '../src/contract/entities.js';
import type { ChangeMessage } from '../src/contract/messages.js';

const PERSONS = Number(process.env.BENCH_PERSONS ?? 100_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const PROPERTIES = Number(process.env.BENCH_PROPERTIES ?? 30);

const ids = Array.from({ length: PERSONS }, () => crypto.randomUUID());

/** Person i's Change at version v, encoded as the control plane encodes it. */
function change(i: number, revision: number, v: number): ChangeMessage {
  const properties = Object.fromEntries(Array.from({ length: PROPERTIES }, (_, k) => [`$prop_${k}`, k % 3 ? `value-${k}-${v}` : k * v]));
  const payload = encodePayload(personEntity({ uuid: ids[i]!, project_id: 1, properties }, [`user-${i}`]));
  return { revision: String(revision), kind: 'person', entity_id: ids[i]!, project_id: '1', op: 'UPSERT', payload };
}

/** Runs `apply` over every batch of version `v`, counting only its CPU; µs per change. */
async function cpuPerChange(v: number, apply: (batch: ChangeMessage[], revision: number) => Promise<void>): Promise<number> {
  let cpu = 0;
  let revision = 1 + v * Math.ceil(PERSONS / BATCH);
  for (let s = 0; s < PERSONS; s += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, PERSONS - s) }, (_, j) => change(s + j, revision, v));
    const t = process.cpuUsage();
    await apply(batch, revision++);
    const d = process.cpuUsage(t);
    cpu += d.user + d.system;
  }
  return cpu / PERSONS;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-apply-'));
  try {
    const raw = open({ path: path.join(dir, 'raw'), mapSize: 4 * 2 ** 30 }).openDB<Buffer, string>({ name: 'entities', encoding: 'binary' });
    const putRaw = async (batch: ChangeMessage[]) => { await raw.transaction(() => { for (const c of batch) raw.putSync(c.entity_id, c.payload as Buffer); }); };
    const store = openNodeStore(path.join(dir, 'node'), { mapSize: 4 * 2 ** 30 });
    const applyReal = async (batch: ChangeMessage[], revision: number) => { await store.applyBatch(batch.map(toStoreChange), revision); };
    const rows: [string, number, number][] = [];
    for (const [name, v] of [['new persons', 0], ['updates, same distinct ids', 1]] as const) {
      const floor = await cpuPerChange(v, putRaw);
      const real = await cpuPerChange(v, applyReal);
      rows.push([name, real, floor]);
    }
    await store.close();
    process.stdout.write(`Node apply of person changes: ${PERSONS.toLocaleString()} persons, ${BATCH} per batch, ${PROPERTIES} properties; Node ${process.version}, ${os.cpus().length} vCPU (${os.cpus()[0]?.model.trim()})\n\n`);
    process.stdout.write('| change | CPU-µs per change | bare put (baseline) | ratio |\n|---|---:|---:|---:|\n');
    for (const [name, real, floor] of rows) process.stdout.write(`| ${name} | ${real.toFixed(1)} | ${floor.toFixed(1)} | ${(real / floor).toFixed(1)}× |\n`);
    process.stdout.write(`\ntarget ≤ 10 CPU-µs per change: ${rows.every(([, real]) => real <= 10) ? 'met' : 'NOT met'}\n`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
