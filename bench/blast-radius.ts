/**
 * `make bench-blast-radius` (`node dist/bench/blast-radius.js`): how long does F17
 * `user_blast_radius` take over 1 M persons? (< 2 s.)
 *
 * Setup: a throw-away embedded Postgres (or DATABASE_URL's server), a real control plane, and
 * BENCH_PERSONS persons (1,000,000) written with set-based SQL, each with `plan` (25 % pro),
 * `email` (half on example.com), `age` and a dozen other properties the condition does not read.
 * Measured twice each (the second warm): the same-run baseline — `count(*)` over the persons —
 * and `POST /feature_flags/user_blast_radius/` for `plan = pro AND email icontains example.com`
 * and for `age > 50`. Printed: seconds and the ratio to the baseline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { connect } from '../src/control-plane/db/connect.js';
import { startControlPlane } from '../src/control-plane/index.js';
import { newPersonalApiKey } from '../src/control-plane/keys/tokens.js';
import { startBenchDatabase } from './database.js';

const PERSONS = Number(process.env.BENCH_PERSONS ?? 1_000_000);

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-blast-'));
  const db = await startBenchDatabase(dir, 'switchyard_bench_blast_');
  const key = newPersonalApiKey();
  const cp = await startControlPlane(testConfig({ dataDir: path.join(dir, 'cp'), bootstrapPersonalApiKey: key, apiBurstRatePerMinute: 0, apiSustainedRatePerHour: 0 }),
    createLogger('warn'), db.url);
  const sql = connect(db.url, { max: 1 });
  try {
    const projectId = cp.bootstrap.projectId;
    const t0 = process.hrtime.bigint();
    await sql`INSERT INTO persons (project_id, properties)
      SELECT ${projectId}, jsonb_build_object('plan', CASE WHEN g % 4 = 0 THEN 'pro' ELSE 'free' END,
        'email', 'p' || g || CASE WHEN g % 2 = 0 THEN '@example.com' ELSE '@mail.test' END, 'age', 18 + g % 60,
        'country', 'c' || (g % 40), 'browser', 'b' || (g % 7), 'os', 'o' || (g % 5), 'utm_source', 's' || (g % 30),
        'utm_medium', 'm' || (g % 9), 'utm_campaign', 'campaign-' || (g % 100), 'company', 'co' || (g % 1000),
        'signup_day', g % 365, 'score', (g::bigint * 7919) % 1000, 'referrer', 'https://ref-' || (g % 50) || '.example.org/')
      FROM generate_series(1, ${PERSONS}::int) g`;
    await sql`VACUUM ANALYZE persons`;
    process.stdout.write(`${PERSONS.toLocaleString()} persons written in ${(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(0)} s\n\n`);
    const timed = async <T>(f: () => Promise<T>): Promise<[number, T]> => {
      const s = process.hrtime.bigint();
      const r = await f();
      return [Number(process.hrtime.bigint() - s) / 1e9, r];
    };
    const call = (properties: unknown[]) => async () => {
      const res = await fetch(`${cp.http.url}/api/projects/${projectId}/feature_flags/user_blast_radius/`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ condition: { properties } }),
      });
      if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
      return res.json() as Promise<{ users_affected: number; total_users: number }>;
    };
    const runs: [string, () => Promise<unknown>][] = [
      ['count(*) over the persons (baseline)', async () => (await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM persons WHERE project_id = ${projectId}`)[0]!.n],
      ['plan = pro AND email icontains example.com', call([{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }, { key: 'email', type: 'person', operator: 'icontains', value: 'example.com' }])],
      ['age > 50', call([{ key: 'age', type: 'person', operator: 'gt', value: '50' }])],
    ];
    const rows: [string, number, number, string][] = [];
    for (const [name, f] of runs) {
      const [cold, out] = await timed(f);
      const [warm] = await timed(f);
      rows.push([name, cold, warm, JSON.stringify(out)]);
    }
    process.stdout.write(`F17 user_blast_radius over ${PERSONS.toLocaleString()} persons; Node ${process.version}, ${os.cpus().length} vCPU (${os.cpus()[0]?.model.trim()})\n\n`);
    process.stdout.write('| run | cold s | warm s | warm / baseline | result |\n|---|---:|---:|---:|---|\n');
    for (const [name, cold, warm, out] of rows) process.stdout.write(`| ${name} | ${cold.toFixed(2)} | ${warm.toFixed(2)} | ${(warm / rows[0]![2]).toFixed(1)}× | ${out} |\n`);
    const worst = Math.max(rows[1]![2], rows[2]![2]);
    process.stdout.write(`\ntarget: < 2 s (warm): ${worst < 2 ? 'met' : 'NOT met'} (slowest ${worst.toFixed(2)} s)\n`);
  } finally {
    await sql.end();
    await cp.close();
    await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
