/**
 * What a command reads and writes besides its arguments: the environment its configuration comes
 * from, stdin, stdout and stderr. src/cli.ts runs every command with {@link PROCESS_IO} (the
 * process's own); a caller in the same process (the tests) passes its own to run a command
 * without starting one.
 */
import fs from 'node:fs';

/** A command's environment and standard streams. */
export interface CommandIo {
  /** The variables the command's configuration is read from (src/config.ts). */
  readonly env: NodeJS.ProcessEnv;
  /** All of stdin as UTF-8 text. @throws when stdin cannot be read. */
  readStdin(): string;
  /** Writes `text` to stdout. */
  out(text: string): void;
  /** Writes `text` to stderr. */
  err(text: string): void;
}

/** The process's environment, stdin (file descriptor 0, read to its end), stdout and stderr. */
export const PROCESS_IO: CommandIo = {
  get env() { return process.env; },
  readStdin: () => fs.readFileSync(0, 'utf8'),
  out: (text) => { process.stdout.write(text); },
  err: (text) => { process.stderr.write(text); },
};
