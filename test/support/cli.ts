/**
 * `switchyard <command>` for tests, two ways: in this process through the command module's own
 * `run(argv, io)` — the function src/cli.ts calls, with the same argument parsing — with a given
 * stdin and environment ({@link runInProcess}); and as a real `node dist/src/cli.js` process
 * ({@link runCli}), for what only a process shows: its exit code, stdin piped in, argv through the
 * real entry. Starting Node costs about a tenth of a CPU-second before any module loads, so a
 * test checks what a command computes in process and keeps a real run or two per command.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';
import type { CommandIo } from '../../src/commands/command-io.js';

/** The built entry point, `switchyard` as installed. */
export const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

/** What a command run left: its exit code and everything it wrote. */
export interface CommandRun { code: number | null; stdout: string; stderr: string }

/** A command module as src/cli.ts loads it. */
export interface CommandModule { run(argv: string[], io: CommandIo): Promise<number> }

/**
 * Runs `command.run(argv, io)` here with `stdin` as its whole stdin (empty when not given, as a
 * child given no input reads) and `env` as its environment (default: this process's).
 * @throws (rejects) what the command throws: src/cli.ts turns that into a line on stderr and
 * exit 1, or the error's `exitCode` (CliError: 2).
 */
export async function runInProcess(command: CommandModule, argv: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CommandRun> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    env: opts.env ?? process.env,
    readStdin: () => opts.stdin ?? '',
    out: (text) => { stdout += text; },
    err: (text) => { stderr += text; },
  };
  const code = await command.run(argv, io);
  return { code, stdout, stderr };
}

/**
 * Runs `node dist/src/cli.js ...args` with `input` piped to its stdin (closed at once when not
 * given) and `env` (default: this process's), without blocking this process (servers the command
 * talks to may live in it); resolves when it has exited and its output has ended.
 */
export function runCli(args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {}); // a command that exits before reading all of its input
    child.stdin.end(opts.input);
  });
}
