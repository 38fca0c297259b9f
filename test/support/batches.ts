/**
 * How test/run.ts groups files into units (test/support/schedule.ts runs one process per unit).
 *
 * Files are batched by the folder they test (`control-plane/`, `eval-node/`, `system/`, the
 * rest), so each batch loads one tier's modules once and runs warm (batch-entry.ts):
 * {@link BATCHES} per folder, filled longest file first into the batch expected to end soonest,
 * so batches of a folder take about as long. A batch runs its files one after another, so a file
 * that starts child processes or a browser, kills processes or measures latency has the process
 * to itself while it runs, as it would alone; what it shares is the loaded modules (about 1.3
 * CPU-s per process for the product's) and a warm JIT. Its `after` hooks must stop what it
 * started, and it must not change process-wide state (environment, signal handlers).
 */

/** Batches per folder: enough to keep the lanes busy at the end of a run, few enough to share loading. */
export const BATCHES: Readonly<Record<string, number>> = { 'control-plane': 4, 'eval-node': 4, system: 6, other: 2 };

/** A file's batch folder, from its path relative to dist/test. */
export function batchFolder(rel: string): string {
  const top = rel.split('/')[0]!;
  return top in BATCHES ? top : 'other';
}

/**
 * Units for `files` (absolute paths): batches per folder (a folder with one file selected is a
 * unit of that file alone). `expectedMs` gives a
 * file's expected wall time (test/support/order.ts), `rel` its path relative to dist/test. Units
 * come longest expected first (a batch's expectation is its files' sum), ties alphabetical.
 */
export function formUnits(files: readonly string[], expectedMs: (file: string) => number, rel: (file: string) => string): string[][] {
  const byFolder = new Map<string, string[]>();
  for (const f of files) {
    const folder = batchFolder(rel(f));
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), f]);
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
  return batches.sort((a, b) => total(b) - total(a) || a[0]!.localeCompare(b[0]!));
}
