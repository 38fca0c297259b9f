/**
 * Graceful stop on SIGINT or SIGTERM (docs/operations.md "Stopping and upgrading").
 * {@link shutdownSignal} installs the handlers at once, so a signal that arrives while the process
 * is still starting (a node can already answer `/_ready` from one IO thread while the next one
 * starts) is kept rather than killing the process.
 *
 * The sequence after the first signal ({@link onShutdown}):
 * 1. drain (SIGTERM only, what orchestrators send; SIGINT, Ctrl-C in a terminal, skips it):
 *    `/_ready` answers 503 `draining` (node and control plane) while everything keeps serving,
 *    for `drainMs` (SWITCHYARD_DRAIN_SECONDS), so load balancers stop sending here;
 * 2. stop: listeners close, requests in flight finish, a node ships what it can and flushes its
 *    usage counts (captured events stay in its durable outbox either way), pools end;
 * 3. the command returns 0 and the process exits.
 * A second signal exits at once (130); the whole stop taking longer than `timeoutMs`
 * (SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS) exits with 1.
 */
import { createRequire } from 'node:module';

/** Exit code after a second signal. */
export const SECOND_SIGNAL_EXIT_CODE = 130;
/** Exit code when the stop outlasts its timeout. */
export const SHUTDOWN_TIMEOUT_EXIT_CODE = 1;

/**
 * Exits at once with `code`, skipping exit handlers, destructors and worker-thread teardown: any
 * regular exit (`process.exit`, even Node's internal `reallyExit`) with IO threads whose
 * uWebSockets.js sockets are open aborts the process (SIGABRT) instead. libc `_exit(2)` through
 * the `koffi` FFI on Linux with glibc (as eval-node/memory/libc.ts loads it), else `process.exit`.
 */
export function forceExit(code: number): never {
  if (process.platform === 'linux') {
    try {
      const koffi = createRequire(import.meta.url)('koffi') as { load(path: string): { func(signature: string): (c: number) => void } };
      koffi.load('libc.so.6').func('void _exit(int status)')(code);
    } catch { /* no FFI here: the regular exit below */ }
  }
  return process.exit(code);
}

/** Installs the handlers now; resolves with the first signal (a second one exits at once). */
export function shutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const handler = (signal: NodeJS.Signals) => {
      if (received) forceExit(SECOND_SIGNAL_EXIT_CODE);
      received = true;
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

/** How to drain before stopping (omitted: stop at once). */
export interface DrainPlan {
  /** Turns the process not-ready (it keeps serving). */
  drain(): void;
  /** How long to keep serving while not ready, in ms. */
  drainMs: number;
  /** Longest the whole stop (drain included) may take before the process exits with 1, in ms. */
  timeoutMs: number;
}

/** The drain plan of `config` (SWITCHYARD_DRAIN_SECONDS, SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS) around `drain`. */
export function drainPlan(config: { drainSeconds: number; shutdownTimeoutSeconds: number }, drain: () => void): DrainPlan {
  return { drain, drainMs: config.drainSeconds * 1000, timeoutMs: config.shutdownTimeoutSeconds * 1000 };
}

type ShutdownLog = { info(o: object | string, msg?: string): void; error(o: object, msg: string): void };

/**
 * Waits for `signal` (default: handlers installed now), then drains (SIGTERM with a `plan`) and
 * runs `stop` once, within the plan's timeout.
 */
export async function onShutdown(stop: () => Promise<void>, log: ShutdownLog,
  signal: Promise<NodeJS.Signals> = shutdownSignal(), plan?: DrainPlan): Promise<void> {
  const received = await signal;
  let stopped = false;
  if (plan) {
    // Unref'd: it must not keep a process alive that has nothing else left to do.
    const force = setTimeout(() => {
      if (stopped) forceExit(typeof process.exitCode === 'number' ? process.exitCode : 0);
      log.error({ timeout_ms: plan.timeoutMs }, 'stop took longer than SWITCHYARD_SHUTDOWN_TIMEOUT_SECONDS; exiting now');
      forceExit(SHUTDOWN_TIMEOUT_EXIT_CODE);
    }, plan.timeoutMs);
    force.unref();
    if (received === 'SIGTERM') {
      log.info({ signal: received, drain_ms: plan.drainMs, timeout_ms: plan.timeoutMs }, `${received} received, draining`);
      plan.drain();
      await new Promise<void>((r) => setTimeout(r, plan.drainMs));
      log.info('drained, stopping');
    } else {
      log.info({ signal: received, timeout_ms: plan.timeoutMs }, `${received} received, stopping`);
    }
  } else {
    log.info(`${received} received, stopping`);
  }
  await stop().catch((e) => log.error({ err: e }, 'error while stopping'));
  stopped = true;
}
