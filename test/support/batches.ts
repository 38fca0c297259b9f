/**
 * How test/run.ts groups files into units (test/support/schedule.ts runs one process per unit).
 *
 * Files are batched by the folder they test (`control-plane/`, `eval-node/`, `system/`, the
 * rest), so each batch loads one tier's modules once and runs warm (batch-entry.ts):
 * {@link BATCHES} per folder, filled longest file first into the batch expected to end soonest,
 * so batches of a folder take about as long. A system test joins a batch only when it is in
 * {@link SHARED_SYSTEM}: its stacks run inside its own process (control plane, nodes), it starts
 * no child process or browser, kills nothing and measures no latency. Every other system test,
 * a new one included until it is listed, runs alone in its own process.
 */

/** Batches per folder: enough to keep the lanes busy at the end of a run, few enough to share loading. */
export const BATCHES: Readonly<Record<string, number>> = { 'control-plane': 4, 'eval-node': 4, system: 3, other: 2 };

/** System tests (names under dist/test/system/) that may share a process with others; see the module doc. */
export const SHARED_SYSTEM: ReadonlySet<string> = new Set([
  'capture-rejects', 'capture', 'continuity-cluster', 'continuity', 'eval-nodes', 'experiment-flags', 'experiment-results',
  'flag-helpers', 'fuzz-sync', 'key-rotation-project', 'local-evaluation', 'remote-config', 'static-cohort', 'usage-dashboard',
].map((name) => `system/${name}.test.js`));

/** A file's batch folder, from its path relative to dist/test; null for a file run alone. */
export function batchFolder(rel: string): string | null {
  if (rel.startsWith('system/')) return SHARED_SYSTEM.has(rel) ? 'system' : null;
  const top = rel.split('/')[0]!;
  return top in BATCHES ? top : 'other';
}

/**
 * Units for `files` (absolute paths): system files alone, the rest in batches. `expectedMs` gives a
 * file's expected wall time (test/support/order.ts), `rel` its path relative to dist/test. Units
 * come longest expected first (a batch's expectation is its files' sum), ties alphabetical.
 */
export function formUnits(files: readonly string[], expectedMs: (file: string) => number, rel: (file: string) => string): string[][] {
  const alone: string[][] = [];
  const byFolder = new Map<string, string[]>();
  for (const f of files) {
    const folder = batchFolder(rel(f));
    if (folder === null) alone.push([f]);
    else byFolder.set(folder, [...(byFolder.get(folder) ?? []), f]);
  }
  const batches: string[][] = [];
  for (const [folder, members] of byFolder) {
    const bins = Array.from({ length: Math.min(BATCHES[folder]!, members.length) }, () => ({ ms: 0, files: [] as string[] }));
    for (const f of [...members].sort((a, b) => expectedMs(b) - expectedMs(a) || a.localeCompare(b))) {
      const bin = bins.reduce((least, b) => (b.ms < least.ms ? b : least));
      bin.files.push(f);
      bin.ms += expectedMs(f);
    }
    batches.push(...bins.map((b) => b.files));
  }
  const total = (unit: string[]) => unit.reduce((a, f) => a + expectedMs(f), 0);
  return [...alone, ...batches].sort((a, b) => total(b) - total(a) || a[0]!.localeCompare(b[0]!));
}
