/**
 * Latency figures for system tests: nearest-rank percentiles of samples in milliseconds, and a
 * sampler of this thread's event-loop delay (`perf_hooks.monitorEventLoopDelay`). Figures are
 * printed and compared with same-run baselines, never asserted as absolute timings in unit tests.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** Nearest-rank percentile `p` (0..100) of `samples` (any unit); NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** Event-loop delay over one window, in milliseconds. */
export interface LoopDelay { p99Ms: number; maxMs: number }

/**
 * Measures the event-loop delay of the calling thread between `start()` and `stop()` (the
 * histogram belongs to the thread that creates it). `resolutionMs` is the sampling timer's
 * period: delays shorter than it are not seen.
 */
export class LoopDelaySampler {
  private readonly histogram: IntervalHistogram;

  constructor(resolutionMs = 10) {
    this.histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  }

  /** Clears the histogram and starts sampling. */
  start(): void {
    this.histogram.reset();
    this.histogram.enable();
  }

  /** Stops sampling; @returns the window's p99 and max delay in ms (0 when nothing was sampled). */
  stop(): LoopDelay {
    this.histogram.disable();
    const h = this.histogram;
    if (h.count === 0) return { p99Ms: 0, maxMs: 0 };
    return { p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6 };
  }
}
