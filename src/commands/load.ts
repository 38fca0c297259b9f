/**
 * `switchyard load --url <node> --key <phc_…>`: PostHog-shaped load against evaluation nodes,
 * for sizing and signing off a deployment (docs/load-testing.md). A fixed run (connections or
 * `--rate`) prints throughput, latency percentiles and answers by status; `--ramp` raises the rate
 * step by step until the p99 objective fails and prints the capacity. `--report` writes the JSON.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CliError } from './cli-error.js';
import { parseLoadArgs, USAGE, type LoadOptions } from '../load/options.js';
import { runLoad, type RunResult } from '../load/driver.js';
import { ramp, type RampReport } from '../load/ramp.js';
import { buildReport, formatRamp, formatRun } from '../load/report.js';
import { PROCESS_IO, type CommandIo } from './command-io.js';

/**
 * Runs the command, printing on `io` (default: the process's stdout and stderr); returns the exit
 * code: 0 done, 2 bad arguments (printed with the reason).
 */
export async function run(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  let o: LoadOptions | null;
  try {
    o = parseLoadArgs(argv);
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    io.err(`switchyard load: ${e.message}\n`);
    return 2;
  }
  if (o === null) { io.out(USAGE); return 0; }
  const opts = o;
  if (opts.report) {
    try {
      fs.accessSync(path.dirname(path.resolve(opts.report)), fs.constants.W_OK);
    } catch {
      io.err(`switchyard load: --report ${opts.report}: its folder does not exist or is not writable\n`);
      return 2;
    }
  }
  const startedAt = new Date();
  const plan = (rate: number | null) => ({
    urls: opts.urls, rate, connections: opts.connections, durationS: opts.durationS, timeoutS: opts.timeoutS, workers: opts.workers,
    spec: { key: opts.key, mix: opts.mix, flagKeys: opts.flagKeys, users: opts.users, batchSize: opts.batchSize },
  });
  const mix = Object.entries(opts.mix).filter(([, p]) => p > 0).map(([k, p]) => `${k} ${p} %`).join(', ');
  io.out(`load: ${opts.urls.join(', ')} — ${mix}, ${opts.durationS} s per run\n`);
  let result: RunResult;
  let rampReport: RampReport | null = null;
  if (opts.ramp) {
    const r = opts.ramp;
    rampReport = await ramp({ start: opts.rate!, factor: r.factor, maxSteps: r.maxSteps, sloP99Ms: r.sloP99Ms },
      (rate) => runLoad(plan(rate)),
      (s) => io.out(`step ${s.step} at ${s.result.target_rps} req/s: ${s.passed ? 'pass' : `fail (${s.failure})`}\n${formatRun(s.result)}\n`));
    result = rampReport.steps[rampReport.steps.length - 1]!.result;
    io.out(`${formatRamp(rampReport)}\n`);
  } else {
    result = await runLoad(plan(opts.rate));
    io.out(`${formatRun(result)}\n`);
  }
  if (opts.report) {
    fs.writeFileSync(opts.report, `${JSON.stringify(buildReport(opts, startedAt, result, rampReport), null, 2)}\n`);
    io.out(`report: ${opts.report}\n`);
  }
  return 0;
}
