/**
 * A full garbage collection of this thread's V8 heap, on demand: after bulk
 * work the node's JS objects that held Buffers are garbage, but V8 collects them (and frees the
 * Buffers' malloc'd memory) only under allocation pressure, which a quiet node no longer has.
 * memory/release.ts runs this in every thread before trimming the malloc arenas.
 *
 * The `gc` function comes from V8's `--expose-gc`, set at run time on first use
 * (`v8.setFlagsFromString`) and read from a fresh context, so the node needs no command-line
 * flag.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

type Gc = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async' }) => void;
let gc: Gc | null | undefined;

/**
 * Runs a synchronous major GC of the calling thread's heap, then a minor one (young-generation
 * pages a major GC gives up are unmapped at the next scavenge); false when V8 refused to expose
 * `gc`. V8 shrinks a grown young generation only in a GC after ~5 s of low allocation (its
 * allocation-throughput window), so a node still serving traffic keeps it.
 */
export function collectGarbage(): boolean {
  if (gc === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const fn: unknown = vm.runInNewContext('gc');
      gc = typeof fn === 'function' ? fn as Gc : null;
    } catch {
      gc = null;
    }
  }
  if (!gc) return false;
  gc({ type: 'major', execution: 'sync' });
  gc({ type: 'minor', execution: 'sync' });
  return true;
}
