/**
 * Runs a command as the README's reader would (a child process with its own environment and
 * working directory) and collects its output.
 */
import { spawn } from 'node:child_process';

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
    child.on('exit', (code) => (code === 0 ? resolve({ out, err }) : reject(new Error(`${cmd} exited ${code}: ${err}\n${out}`))));
  });
}
