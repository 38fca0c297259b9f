/**
 * `switchyard load` options: the usage text and the parser from argv to {@link LoadOptions}.
 * Every bad value is refused with a {@link CliError} (one line naming the option, exit code 2);
 * nothing is clamped silently.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { CliError } from '../commands/cli-error.js';

/** Traffic kinds and their share of requests, in percent (summing to 100). */
export interface Mix { flags: number; capture: number }

/** What one `switchyard load` invocation asks for. Times in seconds unless named `…Ms`. */
export interface LoadOptions {
  /** Node base URLs (`http(s)://host:port`); connections are spread over them round-robin. */
  urls: string[];
  /** Project API key (`phc_…`) sent as `token` (/flags) and `api_key` (/batch/). */
  key: string;
  mix: Mix;
  /** `flag_keys_to_evaluate` of every /flags body; null evaluates all flags. */
  flagKeys: string[] | null;
  /** Keep-alive connections in total (over all workers and URLs). */
  connections: number;
  /** Requests per second in total, or null for as fast as the connections go. */
  rate: number | null;
  durationS: number;
  /** Generator processes. */
  workers: number;
  /** Distinct ids are drawn from this many users. */
  users: number;
  /** Events per `/batch/` request. */
  batchSize: number;
  /** Seconds before a request counts as a timeout (and its connection is reopened). */
  timeoutS: number;
  /** JSON report path, or null. */
  report: string | null;
  /** Ramp mode: null for one fixed run. */
  ramp: { sloP99Ms: number; factor: number; maxSteps: number } | null;
}

/** Defaults of the optional settings (documented in {@link USAGE} and docs/load-testing.md). */
export const DEFAULTS = {
  connections: 50, durationS: 10, users: 100_000, batchSize: 10, timeoutS: 10,
  rampStart: 100, rampFactor: 1.5, rampSteps: 10,
} as const;

/** `switchyard load --help`. */
export const USAGE = `usage: switchyard load --url <node> [--url <node> …] --key <phc_…> [options]

Sends PostHog-shaped traffic to evaluation nodes with autocannon and reports throughput,
latency percentiles and errors by status (docs/load-testing.md).

target
  --url <url>            a node's base URL, e.g. http://127.0.0.1:8000; repeat for several nodes
                         (connections are spread over them round-robin; no load balancer needed)
  --key <phc_…>          the project API key the requests carry

traffic
  --mix <kind=pct,…>     share of each kind in percent, summing to 100 (default flags=100);
                         kinds: flags (POST /flags?v=2, as posthog-node sends it) and
                         capture (POST /batch/, posthog-node's batch shape)
  --flag-keys <a,b,…>    evaluate only these flags (flag_keys_to_evaluate); default all flags
  --users <n>            distinct ids are drawn from n users (default ${DEFAULTS.users}); 30 % of
                         requests come from 100 returning users, the rest are spread over all n
  --batch-size <n>       events per capture batch (default ${DEFAULTS.batchSize}, 1–1000)

load
  --connections <n>      keep-alive connections in total (default ${DEFAULTS.connections})
  --rate <req/s>         a fixed request rate in total instead of as fast as the connections go
  --duration <s>         seconds of each run (default ${DEFAULTS.durationS}); "30" or "30s"
  --workers <n>          generator processes (default: the number of cores, here ${os.availableParallelism()})
  --timeout <s>          seconds before a request counts as a timeout (default ${DEFAULTS.timeoutS})

capacity
  --ramp                 run steps of rising rate: start at --rate (default ${DEFAULTS.rampStart}), multiply
                         by --ramp-factor each step, stop at the first step whose p99 exceeds
                         --slo-p99, that has errors or non-2xx answers, or that reaches less than
                         90 % of its rate; the capacity is the last step that passed
  --slo-p99 <t>          the p99 latency objective, e.g. 50ms or 0.05s (required with --ramp)
  --ramp-factor <x>      rate multiplier between steps, > 1 (default ${DEFAULTS.rampFactor})
  --ramp-steps <n>       at most this many steps (default ${DEFAULTS.rampSteps})

output
  --report <file.json>   also write the figures as JSON
  -h, --help             this text

Exit codes: 0 done (a ramp that found no passing step too), 2 bad arguments.
`;

const SPEC = {
  url: { type: 'string', multiple: true },
  key: { type: 'string' },
  mix: { type: 'string' },
  'flag-keys': { type: 'string' },
  users: { type: 'string' },
  'batch-size': { type: 'string' },
  connections: { type: 'string' },
  rate: { type: 'string' },
  duration: { type: 'string' },
  workers: { type: 'string' },
  timeout: { type: 'string' },
  ramp: { type: 'boolean' },
  'slo-p99': { type: 'string' },
  'ramp-factor': { type: 'string' },
  'ramp-steps': { type: 'string' },
  report: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Every long option `switchyard load` takes (each documented in {@link USAGE}). */
export const OPTION_NAMES: readonly string[] = Object.keys(SPEC);

const bad = (message: string): CliError => new CliError(`${message} (switchyard load --help lists the options)`);

/** A whole number in [min, max] from option `name`, or `fallback` when absent. @throws CliError */
function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw bad(`--${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw bad(`--${name} must be between ${min} and ${max}, got ${raw}`);
  return n;
}

/** Seconds from "30", "30s", "1.5s" or "2m". @throws CliError */
function seconds(name: string, raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m)?$/.exec(raw);
  const v = m ? Number(m[1]) * (m[2] === 'm' ? 60 : 1) : NaN;
  if (!(v > 0) || v > 86_400) throw bad(`--${name} must be a positive number of seconds (e.g. 30 or 30s), got "${raw}"`);
  return v;
}

/** Milliseconds from "50ms", "0.05s" or "50" (ms). @throws CliError */
export function parseMs(name: string, raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(raw);
  const v = m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : NaN;
  if (!(v > 0)) throw bad(`--${name} must be a positive time such as 50ms or 0.05s, got "${raw}"`);
  return v;
}

/** `flags=80,capture=20` → {flags: 80, capture: 20}; kinds left out get 0. @throws CliError */
export function parseMix(raw: string): Mix {
  const mix: Mix = { flags: 0, capture: 0 };
  const seen = new Set<string>();
  for (const part of raw.split(',')) {
    const m = /^(flags|capture)=(\d+)$/.exec(part.trim());
    if (!m) throw bad(`--mix takes kind=percent pairs with kinds flags and capture (e.g. flags=80,capture=20), got "${part}"`);
    if (seen.has(m[1]!)) throw bad(`--mix names ${m[1]} twice`);
    seen.add(m[1]!);
    mix[m[1] as keyof Mix] = Number(m[2]);
  }
  if (mix.flags + mix.capture !== 100) throw bad(`--mix percentages must sum to 100, got ${mix.flags + mix.capture}`);
  return mix;
}

/** A node base URL: http(s) and a host (a trailing "/" at most). @throws CliError */
function nodeUrl(raw: string): string {
  let u: URL;
  try { u = new URL(raw); } catch { throw bad(`--url must be an absolute http(s) URL such as http://127.0.0.1:8000, got "${raw}"`); }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.pathname !== '/' || u.search || u.hash || u.username || u.password) {
    throw bad(`--url must be a node's http(s) base URL without path, query or credentials, got "${raw}"`);
  }
  return `${u.protocol}//${u.host}`;
}

/**
 * Parses `switchyard load` argv. Returns null for `--help`.
 * @throws CliError on any unknown option, missing requirement or out-of-range value.
 */
export function parseLoadArgs(argv: string[]): LoadOptions | null {
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: SPEC, allowPositionals: false, strict: true }));
  } catch (e) {
    throw bad((e as Error).message);
  }
  const str = (k: keyof typeof SPEC) => values[k] as string | undefined;
  if (values.help) return null;
  const urls = (values.url as string[] | undefined ?? []).map(nodeUrl);
  if (urls.length === 0) throw bad('--url is required: the base URL of the node to load');
  const key = str('key');
  if (key === undefined) throw bad('--key is required: the project API key (phc_…)');
  if (!/^phc_[A-Za-z0-9_-]+$/.test(key)) throw bad('--key must be a project API key: phc_ followed by letters, digits, "_" or "-"');
  const mix = str('mix') === undefined ? { flags: 100, capture: 0 } : parseMix(str('mix')!);
  let flagKeys: string[] | null = null;
  if (str('flag-keys') !== undefined) {
    flagKeys = str('flag-keys')!.split(',').map((k) => k.trim());
    if (flagKeys.some((k) => k === '')) throw bad('--flag-keys takes a comma-separated list of flag keys without empty entries');
    if (mix.flags === 0) throw bad('--flag-keys needs flags traffic in --mix');
  }
  const rampOn = values.ramp === true;
  for (const k of ['slo-p99', 'ramp-factor', 'ramp-steps'] as const) {
    if (!rampOn && str(k) !== undefined) throw bad(`--${k} only applies with --ramp`);
  }
  let rate: number | null = str('rate') === undefined ? null : int('rate', str('rate'), 0, 1, 10_000_000);
  let ramp: LoadOptions['ramp'] = null;
  if (rampOn) {
    if (str('slo-p99') === undefined) throw bad('--ramp needs --slo-p99 (e.g. --slo-p99 50ms)');
    const factor = Number(str('ramp-factor') ?? DEFAULTS.rampFactor);
    if (!(factor > 1) || factor > 100) throw bad(`--ramp-factor must be a number above 1 (at most 100), got "${str('ramp-factor')}"`);
    ramp = { sloP99Ms: parseMs('slo-p99', str('slo-p99')!), factor, maxSteps: int('ramp-steps', str('ramp-steps'), DEFAULTS.rampSteps, 1, 100) };
    rate ??= DEFAULTS.rampStart;
  }
  const workers = int('workers', str('workers'), os.availableParallelism(), 1, 256);
  return {
    urls, key, mix, flagKeys, rate, ramp, workers,
    connections: int('connections', str('connections'), DEFAULTS.connections, 1, 100_000),
    durationS: str('duration') === undefined ? DEFAULTS.durationS : seconds('duration', str('duration')!),
    users: int('users', str('users'), DEFAULTS.users, 1, 1_000_000_000),
    batchSize: int('batch-size', str('batch-size'), DEFAULTS.batchSize, 1, 1000),
    timeoutS: str('timeout') === undefined ? DEFAULTS.timeoutS : seconds('timeout', str('timeout')!),
    report: str('report') ?? null,
  };
}
