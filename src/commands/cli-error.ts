/**
 * An error a command reports as one line on stderr with exit code 2 (bad usage or environment),
 * instead of the generic failure (exit 1) of src/cli.ts.
 */
export class CliError extends Error {
  readonly exitCode = 2;
}
