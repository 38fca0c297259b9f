/**
 * `switchyard evaluate --definitions defs.json --request req.json [--person-properties p.json]
 *  [--format v2|v1] [--now <ISO>] [--timezone <IANA>] [--runtime client|server]`
 *
 * Prints the /flags response JSON for one request, offline, using the evaluation core
 * (src/evaluation). `defs.json` is the local-evaluation feed shape `{flags, group_type_mapping,
 * cohorts}`; `req.json` is a /flags body (research/posthog-flag-evaluation.md §5.1);
 * `p.json` is the person's stored (DB) properties, which the request's `person_properties`
 * override. Any file may be `-` for stdin (at most one). `--runtime` stands in for the runtime the
 * HTTP layer would detect from headers (default: undetermined; a body `evaluation_runtime`
 * wins, research §4 "Runtime filter"). `requestId` is a random UUID;
 * `evaluatedAt` and relative dates use `--now` (default: the current time).
 *
 * Exit codes: 0 printed; 2 usage error, unreadable file, bad JSON, an invalid request, or an
 * invalid definition (each problem printed on stderr naming the flag and field).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import {
  compileProject, DefinitionError, evaluateFlags, requestFromBody, RequestBodyError, toFlagsV1, toFlagsV2,
  type ProjectDefinitions,
} from '../evaluation/index.js';
import { PROCESS_IO, type CommandIo } from './command-io.js';

const USAGE = `usage: switchyard evaluate --definitions <defs.json|-> --request <req.json|-> [--person-properties <p.json|->]
                          [--format v2|v1] [--now <ISO-8601>] [--timezone <IANA zone>] [--runtime client|server]
`;

class UsageError extends Error {}

interface Options {
  definitions: string;
  request: string;
  personProperties: string | null;
  format: 'v1' | 'v2';
  nowMs: number | null;
  timezone: string | undefined;
  runtime: 'client' | 'server' | null;
}

function parseArgs(argv: string[]): Options | 'help' {
  const values = new Map<string, string>();
  const known = new Set(['--definitions', '--request', '--person-properties', '--format', '--now', '--timezone', '--runtime']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') return 'help';
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (!known.has(name)) throw new UsageError(`unknown option "${a}"`);
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new UsageError(`${name} needs a value`);
    values.set(name, value);
  }
  const definitions = values.get('--definitions');
  const request = values.get('--request');
  if (!definitions) throw new UsageError('--definitions is required');
  if (!request) throw new UsageError('--request is required');
  const format = values.get('--format') ?? 'v2';
  if (format !== 'v1' && format !== 'v2') throw new UsageError(`--format must be v1 or v2, got "${format}"`);
  let nowMs: number | null = null;
  const now = values.get('--now');
  if (now !== undefined) {
    nowMs = Date.parse(now);
    if (Number.isNaN(nowMs)) throw new UsageError(`--now must be an ISO-8601 date-time, got "${now}"`);
  }
  const runtime = values.get('--runtime') ?? null;
  if (runtime !== null && runtime !== 'client' && runtime !== 'server') throw new UsageError(`--runtime must be client or server, got "${runtime}"`);
  const personProperties = values.get('--person-properties') ?? null;
  const stdinUsers = [definitions, request, personProperties].filter((p) => p === '-').length;
  if (stdinUsers > 1) throw new UsageError('only one input may be read from stdin ("-")');
  return { definitions, request, personProperties, format, nowMs, timezone: values.get('--timezone'), runtime };
}

function readJson(path: string, what: string, io: CommandIo): unknown {
  let text: string;
  try {
    text = path === '-' ? io.readStdin() : fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${what} "${path}": ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${what} "${path === '-' ? 'stdin' : path}" is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * Runs the command with `io` (default: the process's stdin, stdout and stderr); returns the exit
 * code. Writes the response on stdout, problems on stderr.
 */
export async function run(argv: string[], io: CommandIo = PROCESS_IO): Promise<number> {
  try {
    const opts = parseArgs(argv);
    if (opts === 'help') {
      io.out(USAGE);
      return 0;
    }
    const defs = readJson(opts.definitions, 'definitions', io);
    const body = readJson(opts.request, 'request', io);
    const person = opts.personProperties === null ? null : readJson(opts.personProperties, 'person properties', io);
    if (person !== null && (typeof person !== 'object' || Array.isArray(person))) {
      throw new UsageError('person properties must be a JSON object');
    }
    if (opts.timezone !== undefined) {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: opts.timezone });
      } catch {
        throw new UsageError(`--timezone: unknown time zone "${opts.timezone}"`);
      }
    }
    const project = compileProject(defs as ProjectDefinitions, { timezone: opts.timezone });
    if (project.problems.length > 0) {
      for (const p of project.problems) io.err(`switchyard evaluate: invalid definition: flag "${p.flagKey}", field ${p.field}: ${p.message}\n`);
      return 2;
    }
    const req = requestFromBody(body, opts.runtime);
    const nowMs = opts.nowMs ?? Date.now();
    const result = evaluateFlags(project, req, { person_properties: person as Record<string, unknown> | null }, nowMs);
    const extra = { requestId: randomUUID(), evaluatedAt: nowMs };
    const out = opts.format === 'v1' ? toFlagsV1(result, extra) : toFlagsV2(result, extra);
    io.out(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`switchyard evaluate: ${e.message}\n${USAGE}`);
      return 2;
    }
    if (e instanceof DefinitionError) {
      io.err(`switchyard evaluate: invalid definitions: ${e.message}\n`);
      return 2;
    }
    if (e instanceof RequestBodyError) {
      io.err(`switchyard evaluate: invalid request (${e.code}): ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
