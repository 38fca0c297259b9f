/**
 * Graceful stop on SIGINT or SIGTERM. {@link shutdownSignal} installs the handlers at once, so a
 * signal that arrives while the process is still starting (a node can already answer `/_ready`
 * from one IO thread while the next one starts) is kept rather than killing the process; a
 * second signal exits at once (130).
 */

/** Installs the handlers now; resolves with the first signal. */
export function shutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const handler = (signal: NodeJS.Signals) => {
      if (received) process.exit(130);
      received = true;
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

/** Waits for `signal` (default: handlers installed now), then runs `stop` once. */
export async function onShutdown(stop: () => Promise<void>, log: { info(msg: string): void; error(o: object, msg: string): void },
  signal: Promise<NodeJS.Signals> = shutdownSignal()): Promise<void> {
  const received = await signal;
  log.info(`${received} received, stopping`);
  await stop().catch((e) => log.error({ err: e }, 'error while stopping'));
}
