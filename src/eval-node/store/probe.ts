/**
 * Child-process probe of a node store (integrity.ts, issue 8 item 6): `node probe.js <dir>`
 * opens the LMDB environment read-only and reads every key and value of every database,
 * decoding them as the store does, so that damage which would crash or fail the node (SIGSEGV,
 * SIGBUS, an LMDB or decode error) shows here first. Exit 0: all of it was read; 2: an error
 * (message on stderr); killed by a signal: a crash.
 */
import { open } from 'lmdb';
import { unpackTrusted } from '../../contract/payload.js';

/** Reads and decodes everything under `dir`; returns the number of entries. @throws on any error. */
function readAll(dir: string): number {
  const root = open({ path: dir, readOnly: true, maxDbs: 16 });
  let entries = 0;
  for (const name of [...root.getKeys()]) {
    if (typeof name !== 'string') continue;
    if (name === 'entities') {
      // Entities use the payload codec (lmdb.ts ENTITY_CODEC): read raw, decode with it.
      for (const { value } of root.openDB<Buffer>({ name, encoding: 'binary' }).getRange({})) { unpackTrusted(value); entries++; }
    } else {
      for (const entry of root.openDB({ name, encoding: 'msgpack' }).getRange({})) { void entry.value; entries++; }
    }
  }
  return entries;
}

try {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: probe.js <lmdb dir>');
  readAll(dir);
  process.exit(0);
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exit(2);
}
