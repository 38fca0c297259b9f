/**
 * `switchyard quota set --organization N --monthly-flag-requests M|none` sets an
 * organization's monthly /flags request limit (spec §7–§8). `quota show --organization N`
 * prints the limit, this month's usage and whether it is limited.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openAdminDatabase } from './admin-database.js';
import { PROCESS_IO, type CommandIo } from './command-io.js';
import { connect } from '../control-plane/db/connect.js';
import { migrate } from '../control-plane/db/migrate.js';
import { flagRequestUsage, setMonthlyFlagRequestLimit, usagePeriod } from '../control-plane/quota/service.js';

const USAGE = 'usage: switchyard quota set --organization <id> --monthly-flag-requests <count|none>\n       switchyard quota show --organization <id>\n';

/**
 * Runs the command with `io` (default: the process's environment and streams); returns the exit
 * code: 0 done, 2 bad arguments or unknown organization.
 * @throws CliError when there is no server database to use (src/commands/admin-database.ts).
 */
export async function run(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  const [sub, ...rest] = argv;
  let values;
  try {
    ({ values } = parseArgs({ args: rest, options: { organization: { type: 'string' }, 'monthly-flag-requests': { type: 'string' } } }));
  } catch (e) {
    io.err(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const org = Number(values.organization);
  if (!Number.isSafeInteger(org) || org <= 0 || (sub !== 'set' && sub !== 'show')) { io.err(USAGE); return 2; }
  let limit: number | null = null;
  if (sub === 'set') {
    const raw = values['monthly-flag-requests'];
    if (raw === undefined || (raw !== 'none' && !/^\d+$/.test(raw))) { io.err(USAGE); return 2; }
    limit = raw === 'none' ? null : Number(raw);
  }
  const config = loadConfig(io.env);
  const db = await openAdminDatabase(config, io);
  const sql = connect(db.url, { max: 2 });
  try {
    await migrate(sql);
    const [exists] = await sql`SELECT 1 FROM organizations WHERE id = ${org}`;
    if (!exists) { io.err(`unknown organization ${org}\n`); return 2; }
    const period = usagePeriod(new Date());
    if (sub === 'set') await setMonthlyFlagRequestLimit(sql, org, limit);
    const [row] = await sql<{ l: number | null; q: boolean }[]>`SELECT monthly_flag_requests_limit AS l, quota_limited AS q FROM organizations WHERE id = ${org}`;
    io.out(JSON.stringify({ organization: org, monthly_flag_requests_limit: row!.l, period,
      flag_requests: await flagRequestUsage(sql, org, period), quota_limited: row!.q }) + '\n');
    return 0;
  } finally {
    await sql.end({ timeout: 5 });
    await db.release();
  }
}
