/**
 * A damaged capture outbox never stops the node, and its events are not lost (DESIGN.md
 * "Evaluation node": an event answered 200 is the node's to deliver).
 *
 * 1. {@link checkOutbox}, before the outbox opens: the same checks as the node store's
 *    (store/integrity.ts: meta pages in process, then every entry read in a child process, so a
 *    SIGSEGV costs the child). A damaged outbox is moved aside (`capture-outbox.corrupt-<time>`,
 *    store/aside.ts), logged at error level with the path and the reason, and counted; capture
 *    starts on a fresh, empty outbox.
 * 2. {@link startOutboxRecovery}, once capture runs: every copy moved aside and not yet
 *    recovered (this start's, or one a stopped node left half done) is read in a child process
 *    (outbox-salvage.ts, without LMDB: store/salvage.ts) and each readable entry is appended to
 *    the live outbox, from where the shipper sends it as any other. When a copy is read to its
 *    end, `recovered.json` (the counts) is written into it and it may be pruned: the newest
 *    `keep` copies stay (config.keepMovedAside), older recovered ones are deleted.
 *
 * Exactly once: the salvage may also find entries already shipped (old page copies), and a
 * recovery cut short by a stop is run again at the next start; both only resend events whose
 * uuids ingestion has stored, which it drops (control-plane/ingestion/dedupe.ts). What cannot be
 * read is counted (entries, pages) and logged at error level, never silently skipped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../log.js';
import { listAside, moveAside, pruneAside } from '../store/aside.js';
import { checkEnvironment } from '../store/integrity.js';
import { OutboxFullError } from './outbox.js';
import type { SalvageMessage, SalvageReport } from './outbox-salvage.js';

/** File written into a moved-aside copy once its recovery finished (its counts, JSON). */
export const RECOVERED_MARKER = 'recovered.json';
/** Wait before retrying an append the live outbox refused as full, in ms (the shipper drains it). */
export const FULL_RETRY_MS = 1_000;

/** Counts since start, read by /metrics (service.ts). */
export interface OutboxRecoveryStats {
  /** Outboxes found damaged at start and moved aside. */
  movedAside: number;
  /** Entries (capture requests) and events appended to the live outbox from copies moved aside. */
  recoveredEntries: number;
  recoveredEvents: number;
  /** Records on readable pages that did not parse as an outbox entry. */
  unreadableEntries: number;
  /** Pages whose header names them but does not parse. */
  unreadablePages: number;
  /** Pages neither empty nor carrying their own number (a damaged header, or old overflow data). */
  unrecognisedPages: number;
  /** Copies whose reading failed before the end (the child crashed or erred). */
  failedRecoveries: number;
  /** Copies moved aside and deleted by pruning. */
  pruned: number;
}

/** Zeroed {@link OutboxRecoveryStats}. */
export function outboxRecoveryStats(): OutboxRecoveryStats {
  return { movedAside: 0, recoveredEntries: 0, recoveredEvents: 0, unreadableEntries: 0, unreadablePages: 0, unrecognisedPages: 0, failedRecoveries: 0, pruned: 0 };
}

/**
 * Checks the outbox environment at `dir` (module doc, step 1) and moves it aside when damaged.
 * @returns where it went, or null when it is sound or absent. @throws on IO errors of the move.
 */
export async function checkOutbox(dir: string, log: Logger, stats: OutboxRecoveryStats): Promise<string | null> {
  const reason = await checkEnvironment(dir);
  if (reason === null) return null;
  const aside = moveAside(dir);
  stats.movedAside++;
  log.error({ path: dir, moved_to: aside, reason }, 'capture outbox is damaged; moved it aside, capturing into a fresh outbox and recovering its events');
  return aside;
}

/** Whether the copy moved aside at `copy` was read to its end. */
export function recovered(copy: string): boolean {
  return fs.existsSync(path.join(copy, RECOVERED_MARKER));
}

/** Options of {@link startOutboxRecovery}. */
export interface OutboxRecoveryOptions {
  /** The live outbox's directory (copies are `<dir>.corrupt-*`). */
  dir: string;
  /** Copies to keep (config.keepMovedAside). */
  keep: number;
  /** Appends one entry in its stored form to the live outbox and wakes the shipper. @throws OutboxFullError. */
  append(packed: Uint8Array): Promise<void>;
  log: Logger;
  stats: OutboxRecoveryStats;
}

/** A running recovery. */
export interface OutboxRecovery {
  /** Settles when every pending copy was handled (never rejects; failures are logged and counted). */
  done: Promise<void>;
  /** Stops at once (a copy cut short is read again at the next start). */
  stop(): Promise<void>;
}

/** Recovers every copy not yet recovered, oldest first, then prunes (module doc, step 2). */
export function startOutboxRecovery(opts: OutboxRecoveryOptions): OutboxRecovery {
  const log = opts.log.child({ component: 'capture-outbox-recovery' });
  let stopped = false;
  let child: ChildProcess | null = null;
  const run = async () => {
    for (const copy of listAside(opts.dir)) {
      if (stopped) return;
      if (recovered(copy)) continue;
      await recoverCopy(copy);
    }
    if (stopped) return;
    for (const gone of pruneAside(opts.dir, opts.keep, recovered)) {
      opts.stats.pruned++;
      log.warn({ path: gone, keep: opts.keep }, 'deleted an old capture outbox copy moved aside after damage (its events were recovered)');
    }
  };

  const recoverCopy = async (copy: string) => {
    const file = path.join(copy, 'data.mdb');
    const counts = { entries: 0, events: 0 };
    let report: SalvageReport | null = null;
    let failure: string | null = null;
    if (!fs.existsSync(file)) {
      report = { pages: 0, unreadablePages: 0, unrecognisedPages: 0, unreadableRecords: 0, entries: 0, events: 0, repeats: 0 };
    } else {
      log.info({ path: copy }, 'recovering the events of a capture outbox moved aside');
      try {
        report = await salvage(file, counts);
      } catch (e) {
        failure = (e as Error).message;
      }
    }
    if (stopped) return;
    if (report) {
      opts.stats.unreadableEntries += report.unreadableRecords;
      opts.stats.unreadablePages += report.unreadablePages;
      opts.stats.unrecognisedPages += report.unrecognisedPages;
    } else {
      opts.stats.failedRecoveries++;
    }
    const summary = {
      path: copy, recovered_entries: counts.entries, recovered_events: counts.events,
      unreadable_entries: report?.unreadableRecords ?? null, unreadable_pages: report?.unreadablePages ?? null,
      unrecognised_pages: report?.unrecognisedPages ?? null, repeats: report?.repeats ?? null, pages: report?.pages ?? null,
      ...(failure ? { reason: failure } : {}),
    };
    fs.writeFileSync(path.join(copy, RECOVERED_MARKER), `${JSON.stringify({ ...summary, finished_at: new Date().toISOString() })}\n`, { mode: 0o600 });
    if (failure || (report && report.unreadableRecords + report.unreadablePages + report.unrecognisedPages > 0)) {
      log.error(summary, failure ? 'recovering a capture outbox failed part way; the events not recovered are lost'
        : 'recovered a capture outbox moved aside; some of it could not be read and its events are lost');
    } else {
      log.warn(summary, 'recovered every readable event of a capture outbox moved aside');
    }
  };

  /** Runs the salvage child on `file`, appending what it sends; resolves with its final counts. */
  const salvage = (file: string, counts: { entries: number; events: number }) => new Promise<SalvageReport>((resolve, reject) => {
    const script = fileURLToPath(new URL('./outbox-salvage.js', import.meta.url));
    const c = fork(script, [file], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    child = c;
    let stderr = '';
    let report: SalvageReport | null = null;
    let chain = Promise.resolve();
    c.stderr!.on('data', (d: Buffer) => { if (stderr.length < 2_000) stderr += d.toString('utf8'); });
    c.on('message', (m: SalvageMessage) => {
      chain = chain.then(async () => {
        if (m.type === 'done') { report = m.counts; return; }
        for (const entry of m.entries) {
          await appendWhenRoom(entry);
          if (stopped) return;
          counts.entries++;
          opts.stats.recoveredEntries++;
          const events = countEvents(entry);
          counts.events += events;
          opts.stats.recoveredEvents += events;
        }
        if (c.connected) c.send('more');
      }).catch((e: Error) => { c.kill('SIGKILL'); reject(e); });
    });
    c.on('error', (e) => reject(new Error(`salvage could not start: ${e.message}`)));
    c.on('exit', (code, signal) => {
      child = null;
      void chain.then(() => {
        if (code === 0 && report) resolve(report);
        else reject(new Error(`reading the copy ${signal ? `killed the reader (${signal})` : `failed (exit ${code})`}${stderr ? `: ${stderr.trim().split('\n')[0]}` : ''}`));
      });
    });
  });

  const appendWhenRoom = async (entry: Uint8Array) => {
    for (;;) {
      if (stopped) return;
      try { await opts.append(entry); return; } catch (e) {
        if (!(e instanceof OutboxFullError)) throw e;
        await new Promise((r) => setTimeout(r, FULL_RETRY_MS));
      }
    }
  };

  const done = run().catch((e: Error) => { log.error({ err: e }, 'capture outbox recovery stopped on an error'); });
  return {
    done,
    async stop() {
      stopped = true;
      child?.kill('SIGKILL');
      await done;
    },
  };
}

/** Events in one stored entry: the length of its msgpack array header (outbox.ts stores arrays). */
function countEvents(entry: Uint8Array): number {
  const b = entry[0]!;
  if (b >= 0x90 && b <= 0x9f) return b - 0x90;
  const view = Buffer.from(entry.buffer, entry.byteOffset, entry.byteLength);
  if (b === 0xdc) return view.readUInt16BE(1);
  if (b === 0xdd) return view.readUInt32BE(1);
  return 0;
}
