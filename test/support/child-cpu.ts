/**
 * CPU time of this process' finished children: getrusage(RUSAGE_CHILDREN) through koffi (Node
 * has no call for it). The test runner reads it as each file's process exits, so the difference
 * since the previous read is that file's CPU (its own and its waited-for children's; two files
 * that exit in the same turn are counted together). The run's shared Postgres is a child of the
 * runner that exits last, so its CPU is not in any file's figure.
 */
import { createRequire } from 'node:module';

/** `RUSAGE_CHILDREN` (sys/resource.h). */
const RUSAGE_CHILDREN = -1;

let read: (() => number) | null | undefined;

/** User + system CPU of the finished children so far, in milliseconds; null where unavailable. */
export function childrenCpuMs(): number | null {
  if (read === undefined) {
    read = null;
    try {
      const koffi = createRequire(import.meta.url)('koffi') as { load(path: string): { func(signature: string): (...args: unknown[]) => unknown } };
      const getrusage = koffi.load('libc.so.6').func('int getrusage(int who, void *usage)');
      const usage = Buffer.alloc(144); // struct rusage: ru_utime and ru_stime (timeval: int64 s, int64 µs) come first
      read = () => {
        getrusage(RUSAGE_CHILDREN, usage);
        const us = (o: number) => Number(usage.readBigInt64LE(o)) * 1e6 + Number(usage.readBigInt64LE(o + 8));
        return (us(0) + us(16)) / 1000;
      };
    } catch {
      read = null;
    }
  }
  return read ? read() : null;
}
