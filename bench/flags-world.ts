/**
 * The control plane side of `make bench`: a throw-away embedded Postgres (or DATABASE_URL's), a
 * control plane (HTTP + gRPC) on a fresh database, and the 50-flag workload created in it (see
 * bench/flags.ts for the workload and why the cohort and group type go through the store).
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { testConfig } from '../src/config.js';
import { startControlPlane, type ControlPlane } from '../src/control-plane/index.js';
import { appendChanges } from '../src/control-plane/change-log/store.js';
import { cohortEntity, groupTypeMappingEntity, groupTypeMappingId } from '../src/contract/entities.js';
import { newPersonalApiKey } from '../src/control-plane/keys/tokens.js';
import { PAID_COHORT_FILTERS, TOKEN, workloadFlagBodies } from './flags-workload.js';
import { stablePort } from '../test/support/ports.js';
import { seedFlag } from '../test/support/seed.js';
import { startBenchDatabase } from './database.js';

/** Group type index of `company`: bootstrap already maps index 0 to `organization`. */
const COMPANY_INDEX = 1;

/** The control plane side of the bench: Postgres, the control plane (HTTP + gRPC) and the workload in it. */
export interface World {
  cp: ControlPlane;
  /** `host:port` of the control plane's gRPC server (nodes sync from it). */
  controlPlane: string;
  /** The cluster token nodes present. */
  clusterToken: string;
  /**
   * Grows the workload to `count` flags (bench/flags-workload.ts: the 50-flag mix repeated),
   * written as the API writes them (row + change-log entry) without its rate limit; resolves with
   * the change-log revision that holds the last one.
   */
  growTo(count: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Starts a throw-away embedded Postgres (or uses DATABASE_URL's server), a control plane on a fresh
 * database, and creates the workload: the group type and the cohort straight through the store
 * functions (no API for them yet: row + change-log entry in one transaction, as the real writers
 * do), then the 50 flags through `POST /api/projects/:id/feature_flags/` with the bootstrap
 * personal API key. The project is the bootstrap project, whose API key is the workload's TOKEN.
 */
export async function startWorld(dir: string, log: Logger): Promise<World> {
  const db = await startBenchDatabase(dir, 'switchyard_bench_');
  const grpcPort = await stablePort();
  const personalKey = newPersonalApiKey();
  const config = testConfig({ dataDir: path.join(dir, 'control-plane'), grpcPort, bootstrapPersonalApiKey: personalKey, bootstrapProjectApiKey: TOKEN });
  const dropAll = () => db.drop();
  let cp: ControlPlane;
  try {
    cp = await startControlPlane(config, log, db.url);
  } catch (e) {
    await dropAll();
    throw e;
  }
  let cohortId = 0;
  let flagCount = 50;
  const world: World = {
    cp,
    controlPlane: `127.0.0.1:${grpcPort}`,
    clusterToken: config.clusterToken!,
    async growTo(count) {
      const flags = workloadFlagBodies(cohortId, COMPANY_INDEX, 42, count);
      for (; flagCount < count; flagCount++) await seedFlag(cp.sql, cp.bootstrap.projectId, flags[flagCount]!.key, flags[flagCount]!.filters);
      const [h] = await cp.sql<{ r: string }[]>`SELECT max(revision)::text AS r FROM change_log`;
      return Number(h!.r);
    },
    async close() {
      await cp.close();
      await dropAll();
    },
  };
  try {
    const projectId = cp.bootstrap.projectId;
    cohortId = await cp.sql.begin(async (tx) => {
      const [gt] = await tx<{ project_id: number; group_type: string; group_type_index: number }[]>`
        INSERT INTO group_type_mappings (project_id, group_type, group_type_index) VALUES (${projectId}, 'company', ${COMPANY_INDEX})
        RETURNING project_id, group_type, group_type_index`;
      const [c] = await tx<{ id: number; project_id: number; name: string; filters: Record<string, unknown>; is_static: boolean; deleted: boolean }[]>`
        INSERT INTO cohorts (project_id, name, filters) VALUES (${projectId}, 'paid', ${tx.json(PAID_COHORT_FILTERS as never)})
        RETURNING id, project_id, name, filters, is_static, deleted`;
      await appendChanges(tx, [
        { projectId, kind: 'group_type_mapping', entityId: groupTypeMappingId(projectId, COMPANY_INDEX), op: 'upsert', payload: groupTypeMappingEntity(gt!) },
        { projectId, kind: 'cohort', entityId: String(c!.id), op: 'upsert', payload: cohortEntity(c!) },
      ]);
      return c!.id;
    }) as number;
    for (const body of workloadFlagBodies(cohortId, COMPANY_INDEX)) {
      const res = await fetch(`${cp.http.url}/api/projects/${projectId}/feature_flags/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${personalKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status !== 201) throw new Error(`creating flag ${body.key}: ${res.status} ${await res.text()}`);
    }
  } catch (e) {
    await world.close();
    throw e;
  }
  return world;
}
