/**
 * Installs a guard into the postgres.js driver (npm `postgres`, 3.4.x), run by `npm install`
 * (package.json `postinstall`). Why: the driver batches small writes behind a `setImmediate`; when
 * the connection closes first, the scheduled write finds no socket and throws a TypeError outside
 * any promise, which ends the process (porsager/postgres#1154, #1208; open, no release fixes it).
 * A transaction whose backend dies (a Postgres failover) reaches it: the driver writes its
 * ROLLBACK to the dead connection. The guard makes such a write fail the connection's queries
 * with CONNECTION_CLOSED instead, which callers already handle.
 *
 * Idempotent. Exits non-zero when the driver's code is neither the known original nor patched
 * (a new driver version: check whether it still needs the guard, then update this script).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres');
const ORIGINAL = `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)`;
const MARK = '// switchyard: closed-socket guard';
const PATCHED = `  function nextWrite(fn) {
    if (socket === null) { ${MARK}
      const err = Errors.connection('CONNECTION_CLOSED', options)
      nextWriteTimer = chunk = null
      error(err)
      fn && fn(err)
      return false
    }
    const x = socket.write(chunk, fn)`;

let failed = false;
for (const rel of ['src/connection.js', 'cjs/src/connection.js']) {
  const file = path.join(root, rel);
  if (!fs.existsSync(file)) continue;
  const text = fs.readFileSync(file, 'utf8');
  if (text.includes(MARK)) continue;
  if (!text.includes(ORIGINAL)) {
    process.stderr.write(`patch-postgres: ${rel} does not hold the expected nextWrite; see scripts/patch-postgres.mjs\n`);
    failed = true;
    continue;
  }
  fs.writeFileSync(file, text.replace(ORIGINAL, PATCHED));
}
process.exit(failed ? 1 : 0);
