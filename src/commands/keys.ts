/**
 * `switchyard keys create --scopes feature_flag:read,experiment:write [--project N] [--label L]`
 * prints a new personal API key for the first user (issue 1, deliverable 3). The value is
 * shown once; only its hash is stored.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openDatabase } from '../control-plane/db/database.js';
import { connect } from '../control-plane/db/connect.js';
import { migrate } from '../control-plane/db/migrate.js';
import { bootstrap } from '../control-plane/bootstrap.js';
import { parseScopes } from '../control-plane/keys/scopes.js';
import { createPersonalApiKey } from '../control-plane/keys/store.js';
import { isApiError } from '../errors.js';

const USAGE = 'usage: switchyard keys create --scopes <scope,...> [--project <id>]... [--label <text>]\n';

/** Returns the exit code: 0 printed a key, 2 bad arguments. */
export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'create') { process.stderr.write(USAGE); return 2; }
  let values;
  try {
    ({ values } = parseArgs({ args: rest, options: { scopes: { type: 'string' }, project: { type: 'string', multiple: true }, label: { type: 'string' } } }));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  let scopes: string[];
  try {
    scopes = parseScopes(values.scopes ?? '');
  } catch (e) {
    process.stderr.write(`${isApiError(e) ? e.message : String(e)}\n${USAGE}`);
    return 2;
  }
  const projects = (values.project ?? []).map(Number);
  if (projects.some((p) => !Number.isSafeInteger(p) || p <= 0)) { process.stderr.write(`--project takes a project id\n${USAGE}`); return 2; }
  const config = loadConfig();
  const db = await openDatabase(config);
  const sql = connect(db.url, { max: 2 });
  try {
    await migrate(sql);
    const boot = await bootstrap(sql, config);
    const found = await sql<{ id: number }[]>`SELECT id FROM projects WHERE organization_id = ${boot.organizationId} AND id = ANY(${projects}::bigint[])`;
    if (found.length !== projects.length) { process.stderr.write('unknown project id\n'); return 2; }
    const key = await createPersonalApiKey(sql, { userId: boot.userId, label: values.label ?? 'cli', scopes, scopedTeams: projects });
    process.stdout.write(`${key.value}\n`);
    return 0;
  } finally {
    await sql.end({ timeout: 5 });
    await db.release();
  }
}
