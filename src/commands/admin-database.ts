/**
 * The database of the administrative commands (`keys`, `users`, `quota`): the server's own, never
 * a new one. With DATABASE_URL that server; else the embedded cluster under SWITCHYARD_DATA_DIR,
 * which must already exist (created by `switchyard start` or `control-plane`): a command run from
 * another directory must not start a second, empty cluster there and report success on it. It
 * says on stderr which database it used.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { openDatabase, type DatabaseHandle } from '../control-plane/db/database.js';
import { CliError } from './cli-error.js';
import { PROCESS_IO, type CommandIo } from './command-io.js';

/**
 * `hosts/database` of a Postgres URL, without its credentials; a multi-host URL
 * (`postgres://u:p@db1:5432,db2:5432/switchyard`) lists every host. WHATWG URL refuses those.
 */
export function databaseWhere(url: string): string {
  const m = /^[a-z]+:\/\/(?:[^@/]*@)?([^/?#]*)(\/[^?#]*)?/i.exec(url);
  return `${m?.[1] || 'localhost:5432'}${m?.[2] ?? ''}`;
}

/**
 * Opens the server's database for an administrative command, saying which on `io`'s stderr.
 * @throws CliError (exit 2) when there is no DATABASE_URL and no cluster in the data dir.
 */
export async function openAdminDatabase(config: Config, io: Pick<CommandIo, 'err'> = PROCESS_IO): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    io.err(`switchyard: using DATABASE_URL (${databaseWhere(config.databaseUrl)})\n`);
    return openDatabase(config);
  }
  const cluster = path.join(config.dataDir, 'postgres');
  if (!fs.existsSync(path.join(cluster, 'PG_VERSION'))) {
    throw new CliError(`no Switchyard database in ${config.dataDir}: run this where \`switchyard start\` runs, `
      + 'or set SWITCHYARD_DATA_DIR to the server\'s data dir, or DATABASE_URL to its Postgres');
  }
  io.err(`switchyard: using the embedded Postgres in ${cluster} (port ${config.embeddedPostgresPort})\n`);
  return openDatabase(config);
}
