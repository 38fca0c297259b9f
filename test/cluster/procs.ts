/**
 * Processes run inside a host's namespace (`ip netns exec`), each in its own process group,
 * writing stdout and stderr to one log file.
 */
import fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Host } from './net.js';

/** A process running on a host. */
export class HostProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  exitCode: number | null = null;
  signal: NodeJS.Signals | null = null;

  /** `onLine`, when given, receives stdout line by line (stderr still goes to the log). */
  constructor(readonly label: string, readonly host: Host, argv: string[], readonly logFile: string, env: Record<string, string> = {}, onLine?: (line: string) => void) {
    const fd = fs.openSync(logFile, 'a');
    fs.writeSync(fd, `--- ${new Date().toISOString()} start ${argv.join(' ')}\n`);
    this.child = spawn('ip', ['netns', 'exec', host.ns, ...argv], {
      env: { ...process.env, ...env }, stdio: ['ignore', onLine ? 'pipe' : fd, fd], detached: true,
    });
    fs.closeSync(fd);
    if (onLine) {
      let buf = '';
      this.child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) { onLine(buf.slice(0, i)); buf = buf.slice(i + 1); }
      });
    }
    this.exited = new Promise((resolve) => this.child.once('exit', (code, sig) => {
      this.exitCode = code;
      this.signal = sig;
      fs.appendFileSync(logFile, `--- ${new Date().toISOString()} exit code=${code} signal=${sig}\n`);
      resolve(code);
    }));
  }

  get running(): boolean { return this.child.exitCode === null && this.child.signalCode === null; }

  /** Sends `signal` to the process group (the process and any children it forked). */
  signalGroup(signal: NodeJS.Signals): void {
    if (!this.running || this.child.pid === undefined) return;
    try { process.kill(-this.child.pid, signal); } catch { /* already gone */ }
  }

  /** Sends `signal` and waits up to `timeoutMs` for the exit, then SIGKILLs. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    this.signalGroup(signal);
    const done = await Promise.race([this.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!done) { this.signalGroup('SIGKILL'); await this.exited; }
    return this.exitCode;
  }

  /** The last `lines` lines of the log. */
  tail(lines = 40): string {
    try {
      const text = fs.readFileSync(this.logFile, 'utf8').split('\n');
      return text.slice(-lines).join('\n');
    } catch { return '(no log)'; }
  }
}

export function sleep(ms: number): Promise<void> { return new Promise((r) => setTimeout(r, ms)); }

/** Polls `check` every `intervalMs` until it returns true; throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 20_000, intervalMs = 100): Promise<number> {
  const start = Date.now();
  let lastErr: unknown = null;
  for (;;) {
    try { if (await check()) return Date.now() - start; } catch (e) { lastErr = e; }
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
    await sleep(intervalMs);
  }
}
