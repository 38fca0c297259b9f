/**
 * `make bench-regex`: cost of one `regex` search with the linear engine now in
 * use (re2js, src/evaluation/properties/regex.ts) against V8's backtracking RegExp on the same
 * translated pattern (the engine used before, and the same-run baseline), for the patterns
 * flags use (e-mail domains, URL paths, plans) over typical subjects, then on the ReDoS attack
 * subjects, where V8 is capped at a few characters because it is exponential.
 * Knobs: BENCH_ITERATIONS (default 200000). Prints ns per search and the ratio.
 *
 * Current figures beside their same-run floors: docs/benchmarks.md (history in git).
 */
import { compileRegex, regexSearch } from '../src/evaluation/properties/regex.js';
import { BacktrackingTranslator } from '../src/evaluation/properties/regex-translate-js.js';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 200_000);

const CASES: [name: string, pattern: string, subjects: string[]][] = [
  ['email domain', '@(example|posthog)\\.com$', ['jane@example.com', 'bob@acme.io', 'x.y+z@posthog.com']],
  ['url path', '^https?://[^/]+/(pricing|docs)(/.*)?$', ['https://posthog.com/pricing', 'http://a.b/docs/x/y', 'https://x.io/blog']],
  ['case-insensitive plan', '(?i)^(pro|enterprise)$', ['Pro', 'free', 'ENTERPRISE']],
  ['unicode word', '^\\w+$', ['café', 'hello world', 'abc123']],
];

function nsPerSearch(fn: (s: string) => unknown, subjects: string[], n: number): number {
  for (let i = 0; i < Math.min(n, 20_000); i++) fn(subjects[i % subjects.length]!);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(subjects[i % subjects.length]!);
  return Number(process.hrtime.bigint() - t0) / n;
}

console.log(`regex search cost, ${ITERATIONS} searches per row (ns/search)`);
for (const [name, pattern, subjects] of CASES) {
  const compiled = compileRegex(pattern)!;
  const { source, flags } = new BacktrackingTranslator(pattern).translate();
  const v8 = new RegExp(source, flags);
  const re2 = nsPerSearch((s) => regexSearch(compiled, s), subjects, ITERATIONS);
  const bt = nsPerSearch((s) => v8.test(s), subjects, ITERATIONS);
  console.log(`${name.padEnd(24)} re2js ${re2.toFixed(0).padStart(6)}  V8 ${bt.toFixed(0).padStart(6)}  re2js/V8 ${(re2 / bt).toFixed(1)}×`);
}
for (const [pattern, subject] of [['(\\w|\\d)+$', '1'.repeat(24) + '!'], ['([a-z]|[a-z0-9])+@', 'a'.repeat(24) + '!']] as const) {
  const compiled = compileRegex(pattern)!;
  const { source, flags } = new BacktrackingTranslator(pattern).translate();
  const v8 = new RegExp(source, flags);
  const t0 = process.hrtime.bigint();
  v8.test(subject);
  const v8ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const long = subject[0]!.repeat(100_000) + '!';
  const t1 = process.hrtime.bigint();
  regexSearch(compiled, long);
  const re2ms = Number(process.hrtime.bigint() - t1) / 1e6;
  console.log(`attack ${pattern.padEnd(20)} V8 on ${subject.length} chars ${v8ms.toFixed(1)} ms (doubles per char); re2js on 100,001 chars ${re2ms.toFixed(1)} ms`);
}
