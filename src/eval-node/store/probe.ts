/**
 * Child-process probe of a node's LMDB environment, its store or its capture outbox
 * (integrity.ts): `node probe.js <dir>` opens the environment read-only and
 * reads every key and value of every database, decoding them as their owner does (the store's
 * `entities` with the payload codec, the outbox's `capture_outbox` as msgpack event arrays,
 * capture/outbox.ts; other databases msgpack), so that damage which would crash or fail the node
 * (SIGSEGV, SIGBUS, an LMDB or decode error) shows here first. Exit 0: all of it was read; 2: an error
 * (message on stderr); killed by a signal: a crash.
 */
import { open } from 'lmdb';
import { Packr } from 'msgpackr';
import { unpackTrusted } from '../../contract/payload.js';

/** The outbox's stored form: plain msgpack arrays (capture/outbox.ts). */
const plain = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** Reads and decodes everything under `dir`; returns the number of entries. @throws on any error. */
function readAll(dir: string): number {
  const root = open({ path: dir, readOnly: true, maxDbs: 16 });
  let entries = 0;
  for (const name of [...root.getKeys()]) {
    if (typeof name !== 'string') continue;
    if (name === 'entities') {
      // Entities use the payload codec (lmdb.ts ENTITY_CODEC): read raw, decode with it.
      for (const { value } of root.openDB<Buffer>({ name, encoding: 'binary' }).getRange({})) { unpackTrusted(value); entries++; }
    } else if (name === 'capture_outbox') {
      for (const { value } of root.openDB<Buffer>({ name, encoding: 'binary' }).getRange({})) {
        if (!Array.isArray(plain.unpack(value))) throw new Error('a capture outbox entry is not an event array');
        entries++;
      }
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
