/**
 * The libc calls a node makes through the `koffi` FFI (prebuilt for the platform; no compiler at
 * install): two to hand memory back to the OS after bulk work, and one clock:
 *
 * - `madvise(addr, length, MADV_DONTNEED)`: drop this process' page-table entries for a range
 *   (memory/mapped-pages.ts uses it on the LMDB file mappings);
 * - `malloc_trim(0)`: return the free pages of every malloc arena, not only the top of the main
 *   heap (glibc; buffers freed after a load otherwise stay resident);
 * - `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: the CPU time of the calling thread (~0.7 µs a call
 *   here), which Node 20 does not expose (pool/budget-clock.ts).
 *
 * Loaded on first use; null on other platforms or C libraries, or when the FFI cannot load.
 */
import { createRequire } from 'node:module';

/** `MADV_DONTNEED` on Linux (asm-generic/mman-common.h). */
export const MADV_DONTNEED = 4;

/** The libc functions, or null where unavailable. */
export interface Libc {
  /** madvise(2): 0 on success, -1 on error. */
  madvise(addr: bigint, length: number, advice: number): number;
  /** glibc malloc_trim(3): 1 when memory was released, 0 when none could be. */
  mallocTrim(pad: number): number;
  /** CPU time of the calling thread, in milliseconds (clock_gettime(CLOCK_THREAD_CPUTIME_ID)). */
  threadCpuMs(): number;
}

/** `CLOCK_THREAD_CPUTIME_ID` on Linux (linux/time.h). */
const CLOCK_THREAD_CPUTIME_ID = 3;

let libc: Libc | null | undefined;

/** libc through koffi, or null (not Linux with glibc, or the FFI failed to load). Never throws. */
export function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== 'linux') return null;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as {
      load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
    };
    const lib = koffi.load('libc.so.6');
    const madvise = lib.func('int madvise(uintptr_t addr, size_t length, int advice)');
    const mallocTrim = lib.func('int malloc_trim(size_t pad)');
    const clockGettime = lib.func('int clock_gettime(int clk, void *tp)');
    const timespec = Buffer.alloc(16); // struct timespec { int64 tv_sec; int64 tv_nsec } on x86-64 and arm64
    libc = {
      madvise: (addr, length, advice) => madvise(addr, length, advice) as number,
      mallocTrim: (pad) => mallocTrim(pad) as number,
      threadCpuMs: () => {
        clockGettime(CLOCK_THREAD_CPUTIME_ID, timespec);
        return Number(timespec.readBigInt64LE(0)) * 1e3 + Number(timespec.readBigInt64LE(8)) / 1e6;
      },
    };
  } catch {
    libc = null;
  }
  return libc;
}
