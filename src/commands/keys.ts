/**
 * Personal API keys from the command line:
 * - `switchyard keys create --scopes feature_flag:read,experiment:write [--project N] [--label L]`
 *   prints a new key for the first user; the value is shown once, only
 *   its hash is stored;
 * - `switchyard keys list` prints every key: id, user, label, masked value, scopes, last use;
 * - `switchyard keys revoke <id | unique id prefix | phx_ value>` deletes one key; the change
 *   log carries the revocation to every evaluation node.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openAdminDatabase } from './admin-database.js';
import { PROCESS_IO, type CommandIo } from './command-io.js';
import { connect } from '../control-plane/db/connect.js';
import { migrate } from '../control-plane/db/migrate.js';
import { bootstrap } from '../control-plane/bootstrap.js';
import { parseScopes } from '../control-plane/keys/scopes.js';
import { createPersonalApiKey, listPersonalApiKeys, revokePersonalApiKey } from '../control-plane/keys/store.js';
import { hashPersonalApiKey } from '../control-plane/keys/tokens.js';
import type { Sql } from '../control-plane/db/connect.js';
import { isApiError } from '../errors.js';

const USAGE = 'usage: switchyard keys create --scopes <scope,...> [--project <id>]... [--label <text>]\n'
  + '       switchyard keys list\n'
  + '       switchyard keys revoke <id | id prefix | phx_ key>\n';

/**
 * Runs the command with `io` (default: the process's environment and streams); returns the exit
 * code: 0 done, 1 no such key (revoke), 2 bad arguments.
 * @throws CliError when there is no server database to use (src/commands/admin-database.ts).
 */
export async function run(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'list' || sub === 'revoke') return manage(sub, rest, io);
  if (sub !== 'create') { io.err(USAGE); return 2; }
  let values;
  try {
    ({ values } = parseArgs({ args: rest, options: { scopes: { type: 'string' }, project: { type: 'string', multiple: true }, label: { type: 'string' } } }));
  } catch (e) {
    io.err(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  let scopes: string[];
  try {
    scopes = parseScopes(values.scopes ?? '');
  } catch (e) {
    io.err(`${isApiError(e) ? e.message : String(e)}\n${USAGE}`);
    return 2;
  }
  const projects = (values.project ?? []).map(Number);
  if (projects.some((p) => !Number.isSafeInteger(p) || p <= 0)) { io.err(`--project takes a project id\n${USAGE}`); return 2; }
  const config = loadConfig(io.env);
  const db = await openAdminDatabase(config, io);
  const sql = connect(db.url, { max: 2 });
  try {
    await migrate(sql);
    const boot = await bootstrap(sql, config);
    const found = await sql<{ id: number }[]>`SELECT id FROM projects WHERE organization_id = ${boot.organizationId} AND id = ANY(${projects}::bigint[])`;
    if (found.length !== projects.length) { io.err('unknown project id\n'); return 2; }
    const key = await createPersonalApiKey(sql, { userId: boot.userId, label: values.label ?? 'cli', scopes, scopedTeams: projects });
    io.out(`${key.value}\n`);
    return 0;
  } finally {
    await sql.end({ timeout: 5 });
    await db.release();
  }
}

/** `keys list` and `keys revoke`; exit 0 done, 1 no such key, 2 bad arguments. */
async function manage(sub: 'list' | 'revoke', rest: string[], io: CommandIo): Promise<number> {
  if ((sub === 'list' && rest.length !== 0) || (sub === 'revoke' && rest.length !== 1)) { io.err(USAGE); return 2; }
  const config = loadConfig(io.env);
  const db = await openAdminDatabase(config, io);
  const sql = connect(db.url, { max: 2 });
  try {
    await migrate(sql);
    if (sub === 'list') {
      for (const k of await listPersonalApiKeys(sql, null)) {
        io.out(`${k.id}\tuser ${k.user_id}\t${k.mask_value}\t${k.label}\t${k.scopes.join(',')}\tlast used ${k.last_used_at?.toISOString() ?? 'never'}\n`);
      }
      return 0;
    }
    const id = await resolveKeyId(sql, rest[0]!);
    if (typeof id !== 'string') { io.err(`${id.error}\n`); return 1; }
    const revoked = await revokePersonalApiKey(sql, id, null);
    if (!revoked) { io.err('no such key\n'); return 1; }
    io.out(`revoked ${revoked.id} (${revoked.mask_value}, user ${revoked.user_id})\n`);
    return 0;
  } finally {
    await sql.end({ timeout: 5 });
    await db.release();
  }
}

/** A key id from an id, a unique id prefix (4+ characters) or a full `phx_` value. */
async function resolveKeyId(sql: Sql, ref: string): Promise<string | { error: string }> {
  if (ref.startsWith('phx_')) {
    const [row] = await sql<{ id: string }[]>`SELECT id FROM personal_api_keys WHERE secure_value = ${hashPersonalApiKey(ref)}`;
    return row ? row.id : { error: 'no key has this value' };
  }
  if (ref.length < 4) return { error: 'give the key id or at least 4 characters of it' };
  const rows = await sql<{ id: string }[]>`SELECT id FROM personal_api_keys WHERE starts_with(id, ${ref}) ORDER BY id LIMIT 2`;
  if (rows.length === 0) return { error: 'no key id starts with this' };
  if (rows.length > 1) return { error: 'more than one key id starts with this; give more characters' };
  return rows[0]!.id;
}
