/**
 * Child processes for tests: their exit with all the output they wrote ({@link exitWithOutput}),
 * and a command run as the README's reader would ({@link runCommand}).
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** How long after a child's exit its output pipes may take to end, in ms (a grandchild may still hold them). */
const OUTPUT_GRACE_MS = 1_000;

/**
 * Resolves with the child's exit code and signal once it has exited and its piped stdout and
 * stderr have ended (or {@link OUTPUT_GRACE_MS} after the exit, when a process it started still
 * holds them): `exit` alone can come before the last output is read, so a test that reads the
 * output on `exit` could miss the line it looks for.
 */
export function exitWithOutput(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const ended = [child.stdout, child.stderr].filter((s) => s !== null).map((s) => new Promise<void>((r) => {
    if (s.readableEnded || s.destroyed) r(); else { s.once('end', () => r()); s.once('close', () => r()); }
  }));
  return new Promise((resolve) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      const grace = new Promise<void>((r) => setTimeout(r, OUTPUT_GRACE_MS).unref());
      void Promise.race([Promise.all(ended), grace]).then(() => resolve({ code, signal }));
    };
    if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
    else child.once('exit', onExit);
  });
}

/**
 * Runs `cmd args` with `env` in `cwd`; resolves with its stdout and stderr.
 * @throws (rejects) when it cannot start or exits non-zero, with both outputs in the message.
 */
export function runCommand(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    child.on('error', reject);
    void exitWithOutput(child).then(({ code }) => (code === 0 ? resolve({ out, err }) : reject(new Error(`${cmd} exited ${code}: ${err}\n${out}`))));
  });
}
