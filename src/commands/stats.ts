/**
 * `switchyard stats [file|-]`: reads per-variant sufficient statistics as JSON
 * (`{"method", "variants": [{"key", "n", "sum", "sum_squares", …}], "config": {…}}`; see
 * src/stats/analyze.ts for every method and shape) from a file or stdin (the default) and prints
 * the result as JSON, so analysts can check numbers offline.
 *
 * Exit codes: 0 printed; 2 usage error, unreadable file, bad JSON or input that cannot be
 * analysed (the reason on stderr).
 */
import fs from 'node:fs';
import { analyze, InputError } from '../stats/analyze.js';

const USAGE = `usage: switchyard stats [<input.json> | -]
  input: {"method": "bayesian"|"frequentist"|"sequential"|"srm"|"holm"|"benjamini_hochberg"|"sample_size",
          "variants": [{"key": "control", "n": 1000, "sum": 120, "sum_squares": 160}, ...],
          "config": {"alpha": 0.05, "ci_level": 0.95, "difference_type": "relative", ...}}
`;

/** Runs the command; returns the exit code. */
export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (argv.length > 1) {
    process.stderr.write(`switchyard stats: one input at most\n${USAGE}`);
    return 2;
  }
  const source = argv[0] ?? '-';
  let text: string;
  try {
    text = fs.readFileSync(source === '-' ? 0 : source, 'utf8');
  } catch (e) {
    process.stderr.write(`switchyard stats: cannot read ${source}: ${(e as Error).message}\n`);
    return 2;
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (e) {
    process.stderr.write(`switchyard stats: the input is not JSON: ${(e as Error).message}\n`);
    return 2;
  }
  try {
    process.stdout.write(`${JSON.stringify(analyze(input), (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 2)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof InputError) {
      process.stderr.write(`switchyard stats: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
