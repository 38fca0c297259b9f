/**
 * Question 4 of `bench/propagation.ts` (the definition): with N evaluation nodes
 * (default 3), how long from a management-API PATCH's 200 until EVERY node serves the change on
 * `POST /flags`, over CHANGES sequential changes (default 200)? Target: p99 < 50 ms.
 *
 * Real parts only: a control plane (`startControlPlane`: HTTP API + gRPC) on its own database,
 * N node services (`startNodeService`: LMDB + Watch + uWS HTTP) with separate data dirs, all on
 * 127.0.0.1. After each PATCH answers (its body carries the new `version`), every node is polled
 * with `/flags?v=2` for that flag until `metadata.version` equals it; the sample is the time until
 * the slowest node serves it. Same-run baselines: the PATCH round trip itself, and one /flags
 * round trip to a node. Every wait is bounded by `timeoutMs`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startControlPlane } from '../src/control-plane/index.js';
import { startNodeService, type NodeService } from '../src/eval-node/service.js';
import { newPersonalApiKey, newProjectApiKey } from '../src/control-plane/keys/tokens.js';
import { stablePort } from '../test/support/ports.js';

/** Figures of one run, in milliseconds. */
export interface NodesPropagation { samples: number[]; patchMs: number[]; flagsMs: number[] }

/** Runs the measurement against a fresh database at `databaseUrl`. */
export async function measureNodesPropagation(databaseUrl: string, nodes: number, changes: number, timeoutMs: number): Promise<NodesPropagation> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-nodes-'));
  const personal = newPersonalApiKey();
  const token = newProjectApiKey();
  const grpcPort = await stablePort();
  const log = createLogger('silent');
  const config = testConfig({ dataDir: tmp, grpcPort, bootstrapPersonalApiKey: personal, bootstrapProjectApiKey: token });
  const cp = await startControlPlane(config, log, databaseUrl);
  const services: NodeService[] = [];
  try {
    for (let i = 0; i < nodes; i++) {
      services.push(await startNodeService(testConfig({
        ...config, dataDir: path.join(tmp, `node-${i}`), controlPlane: `127.0.0.1:${cp.grpc!.port}`,
      }), log));
    }
    const deadline = Date.now() + timeoutMs;
    while (!services.every((s) => s.node.store.hasCompleteSnapshot())) {
      if (Date.now() > deadline) throw new Error('nodes did not get a snapshot in time');
      await new Promise((r) => setTimeout(r, 10));
    }
    const api = `${cp.http.url}/api/projects/${cp.bootstrap.projectId}/feature_flags/`;
    const headers = { authorization: `Bearer ${personal}`, 'content-type': 'application/json' };
    const created = await (await fetch(api, { method: 'POST', headers, body: JSON.stringify({
      key: 'propagation-probe', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } }) })).json() as { id: number };
    const flagsBody = JSON.stringify({ token, distinct_id: 'probe-user', flag_keys_to_evaluate: ['propagation-probe'] });
    const servedVersion = async (url: string): Promise<number> => {
      const t0 = performance.now();
      const r = await fetch(`${url}/flags?v=2`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: flagsBody });
      const body = await r.json() as { flags: Record<string, { metadata: { version: number } }> };
      out.flagsMs.push(performance.now() - t0);
      return body.flags['propagation-probe']?.metadata.version ?? -1;
    };
    const out: NodesPropagation = { samples: [], patchMs: [], flagsMs: [] };
    for (let n = 1; n <= changes; n++) {
      const t0 = performance.now();
      const res = await fetch(`${api}${created.id}/`, { method: 'PATCH', headers, body: JSON.stringify({ name: `change ${n}` }) });
      const { version } = await res.json() as { version: number };
      const answered = performance.now();
      out.patchMs.push(answered - t0);
      await Promise.all(services.map(async (s) => {
        while ((await servedVersion(s.http.url)) !== version) {
          if (performance.now() - answered > timeoutMs) throw new Error(`node ${s.http.url} did not serve version ${version}`);
        }
      }));
      out.samples.push(performance.now() - answered);
    }
    return out;
  } finally {
    for (const s of services) await s.close();
    await cp.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
