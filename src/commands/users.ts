/**
 * `switchyard users deactivate <user id | email>`: marks the user inactive, so their personal
 * API keys stop working on the control plane at once and, through the change log, on every
 * evaluation node. Exit 0 done, 1 no such user, 2 bad arguments.
 */
import { loadConfig } from '../config.js';
import { openAdminDatabase } from './admin-database.js';
import { PROCESS_IO, type CommandIo } from './command-io.js';
import { connect } from '../control-plane/db/connect.js';
import { migrate } from '../control-plane/db/migrate.js';
import { deactivateUser } from '../control-plane/keys/store.js';

const USAGE = 'usage: switchyard users deactivate <user id | email>\n';

/**
 * Runs the command with `io` (default: the process's environment and streams); returns the exit
 * code. @throws CliError when there is no server database to use (src/commands/admin-database.ts).
 */
export async function run(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  const [sub, ref, ...extra] = argv;
  if (sub !== 'deactivate' || !ref || extra.length > 0) { io.err(USAGE); return 2; }
  const config = loadConfig(io.env);
  const db = await openAdminDatabase(config, io);
  const sql = connect(db.url, { max: 2 });
  try {
    await migrate(sql);
    const [user] = /^\d+$/.test(ref)
      ? await sql<{ id: number }[]>`SELECT id FROM users WHERE id = ${ref}::bigint`
      : await sql<{ id: number }[]>`SELECT id FROM users WHERE lower(email) = lower(${ref})`;
    if (!user) { io.err('no such user\n'); return 1; }
    const keys = await deactivateUser(sql, Number(user.id));
    io.out(`deactivated user ${user.id}; ${keys} personal API key(s) withdrawn from every node\n`);
    return 0;
  } finally {
    await sql.end({ timeout: 5 });
    await db.release();
  }
}
