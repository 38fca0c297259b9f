/**
 * Reads the records of a damaged LMDB data file without LMDB (capture/outbox-recovery.ts): the
 * file is read page by page with plain reads, never mapped, and every leaf page found is parsed
 * with bounds checks, so no damage can crash the reader; a page or record that does not parse
 * is counted, not fatal. This reads what LMDB cannot open at all (both meta pages overwritten)
 * and what lies beyond a damaged branch page.
 *
 * Layout read (lmdb-js builds LMDB's mdb.master3 branch; integrity.ts): pages of the size in a
 * sound meta page (else 4096) whose 24-byte header is pgno u64 @0, txnid u64 @8, flags u16 @18,
 * lower u16 @20 (twice the record count), upper u16 @22; an overflow page keeps its page count
 * as u32 @20. A leaf page's record offsets (u16, relative to the header's end) follow the
 * header; a record is data size (u16 lo @0, u16 hi @2), flags u16 @4, key size u16 @6, key,
 * then the data, or with F_BIGDATA the u64 number of the overflow page holding it.
 *
 * What comes back is every record on every leaf page, live or not: LMDB copies a page on write
 * and reuses freed pages later, so a record deleted a while ago may still be on a freed page.
 * Callers must tolerate records seen before (the outbox's events are deduplicated by uuid at
 * ingestion, control-plane/ingestion/dedupe.ts). Records naming a sub-database and free-list
 * records are skipped.
 */
import fs from 'node:fs';

const HEADER = 24;
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_OVERFLOW = 0x04;
const P_META = 0x08;
const P_LEAF2 = 0x20;
const P_SUBP = 0x40;
/** Every page flag LMDB writes (P_DIRTY 0x10, P_LOOSE 0x4000, P_KEEP 0x8000 included). */
const KNOWN_FLAGS = 0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x20 | 0x40 | 0x4000 | 0x8000;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;
const F_DUPDATA = 0x04;
/** Page size when neither meta page says (lmdb-js's default, the OS page size on x86-64 and arm64). */
const DEFAULT_PAGE_SIZE = 4096;

/** One record found on a leaf page. */
export interface SalvagedRecord { key: Buffer; value: Buffer; page: number }

/** What a scan found, for logs and metrics. */
export interface SalvageCounts {
  /** Pages in the file. */
  pages: number;
  /** Pages whose header names them but whose flags or record table do not parse. */
  unreadablePages: number;
  /** Pages that are neither empty nor carry their own number (a damaged header, or old overflow data). */
  unrecognisedPages: number;
  /** Records on readable leaf pages that do not parse (bounds, a missing overflow page). */
  unreadableRecords: number;
}

/** The page size in a sound meta page of `fd`, else {@link DEFAULT_PAGE_SIZE}. */
function pageSizeOf(fd: number): number {
  const b = Buffer.alloc(64);
  for (const offset of [0, DEFAULT_PAGE_SIZE]) {
    if (fs.readSync(fd, b, 0, b.length, offset) < b.length) continue;
    if ((b.readUInt16LE(18) & P_META) === 0 || b.readUInt32LE(24) !== 0xbeefc0de) continue;
    const size = b.readUInt32LE(48);
    if (size >= 512 && size <= 65_536 && (size & (size - 1)) === 0) return size;
  }
  return DEFAULT_PAGE_SIZE;
}

/**
 * Scans `file` (an LMDB `data.mdb`), yielding every record of every readable leaf page and
 * adding what it could not read to `counts`. @throws only when the file cannot be opened.
 */
export function* salvageRecords(file: string, counts: SalvageCounts): Generator<SalvagedRecord> {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const pageSize = pageSizeOf(fd);
    const pages = Math.floor(size / pageSize);
    counts.pages += pages;
    const page = Buffer.alloc(pageSize);
    let overflowEnd = 0; // pages of an overflow run hold raw data: not headers
    for (let n = 2; n < pages; n++) {
      fs.readSync(fd, page, 0, pageSize, n * pageSize);
      const pgno = page.readBigUInt64LE(0);
      const flags = page.readUInt16LE(18);
      if (pgno !== BigInt(n)) {
        if (n >= overflowEnd && !isZero(page, HEADER)) counts.unrecognisedPages++;
        continue;
      }
      if ((flags & ~KNOWN_FLAGS) !== 0 || (flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_META)) === 0) { counts.unreadablePages++; continue; }
      if (flags & P_OVERFLOW) { overflowEnd = n + Math.max(1, page.readUInt32LE(20)); continue; }
      if (!(flags & P_LEAF) || (flags & (P_BRANCH | P_META | P_LEAF2 | P_SUBP))) continue; // branch pages hold no values
      const lower = page.readUInt16LE(20);
      const upper = page.readUInt16LE(22);
      if (lower % 2 !== 0 || lower > upper || HEADER + upper > pageSize) { counts.unreadablePages++; continue; }
      for (let i = 0; i < lower / 2; i++) {
        const record = readRecord(fd, page, pageSize, page.readUInt16LE(HEADER + 2 * i), upper);
        if (record === null) counts.unreadableRecords++;
        else if (record !== 'skip') yield { ...record, page: n };
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** The record at table offset `ptr` of `page`: null when it does not parse, 'skip' for sub-database and free-list records. */
function readRecord(fd: number, page: Buffer, pageSize: number, ptr: number, upper: number): { key: Buffer; value: Buffer } | null | 'skip' {
  const at = HEADER + ptr;
  if (ptr < upper || at + 8 > pageSize) return null;
  const dataSize = page.readUInt16LE(at) + page.readUInt16LE(at + 2) * 65_536;
  const flags = page.readUInt16LE(at + 4);
  const keySize = page.readUInt16LE(at + 6);
  const keyEnd = at + 8 + keySize;
  if (keyEnd > pageSize) return null;
  if (flags & (F_SUBDATA | F_DUPDATA)) return 'skip';
  const key = Buffer.from(page.subarray(at + 8, keyEnd));
  let value: Buffer;
  if (flags & F_BIGDATA) {
    if (keyEnd + 8 > pageSize) return null;
    const first = page.readBigUInt64LE(keyEnd);
    if (first < 2n || first > BigInt(Math.floor(Number.MAX_SAFE_INTEGER / pageSize))) return null;
    const head = Buffer.alloc(HEADER);
    const offset = Number(first) * pageSize;
    if (fs.readSync(fd, head, 0, HEADER, offset) < HEADER) return null;
    if (head.readBigUInt64LE(0) !== first || !(head.readUInt16LE(18) & P_OVERFLOW)) return null;
    if (HEADER + dataSize > head.readUInt32LE(20) * pageSize) return null;
    value = Buffer.alloc(dataSize);
    if (fs.readSync(fd, value, 0, dataSize, offset + HEADER) < dataSize) return null;
  } else {
    if (keyEnd + dataSize > pageSize) return null;
    value = Buffer.from(page.subarray(keyEnd, keyEnd + dataSize));
  }
  // A free-list record (LMDB's FREE_DBI): a txnid key and an ID list whose first word is its length.
  if (keySize === 8 && dataSize >= 8 && dataSize % 8 === 0 && value.readBigUInt64LE(0) === BigInt(dataSize / 8 - 1)) return 'skip';
  return { key, value };
}

function isZero(b: Buffer, length: number): boolean {
  for (let i = 0; i < length; i++) if (b[i] !== 0) return false;
  return true;
}
