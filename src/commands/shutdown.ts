/**
 * Waits for SIGINT or SIGTERM, then runs `stop` once; a second signal exits at once.
 */
export function onShutdown(stop: () => Promise<void>, log: { info(msg: string): void; error(o: object, msg: string): void }): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const handler = (signal: NodeJS.Signals) => {
      if (stopping) process.exit(130);
      stopping = true;
      log.info(`${signal} received, stopping`);
      stop().catch((e) => log.error({ err: e }, 'error while stopping')).finally(() => resolve());
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}
