/**
 * The cluster token of a single-machine `switchyard start`: SWITCHYARD_CLUSTER_TOKEN when set,
 * else a random token kept in `<dataDir>/cluster-token` (mode 0600) so that it survives
 * restarts and an extra `switchyard eval-node` can be pointed at it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

/** Returns the configured token, or the stored one (created on first use). */
export function resolveClusterToken(config: Config): string {
  if (config.clusterToken) return config.clusterToken;
  const file = path.join(config.dataDir, 'cluster-token');
  try {
    const stored = fs.readFileSync(file, 'utf8').trim();
    if (stored) return stored;
  } catch { /* first start */ }
  fs.mkdirSync(config.dataDir, { recursive: true });
  const token = crypto.randomBytes(32).toString('base64url');
  fs.writeFileSync(file, token + '\n', { mode: 0o600 });
  return token;
}
