/**
 * TCP ports on 127.0.0.1 for tests and benchmarks.
 *
 * A server of ours binds port 0 and reports the port it got (fastify `listen({ port: 0 })`,
 * gRPC `bindAsync('127.0.0.1:0')`, uWS `us_socket_local_port`): nothing can take it in between.
 * A number is picked in advance only where that is impossible: a process that binds the port
 * itself (Postgres, a spawned CLI), or a server stopped and started again on the same port
 * while clients keep its address. Those use {@link stablePort}.
 */
import fs from 'node:fs';
import net from 'node:net';

/**
 * Returns a port that was free a moment ago (bind to 0, read it, close). The port comes from
 * the kernel's ephemeral range, which the kernel also hands to every outgoing connection and
 * every `listen(0)` on the machine: by the time the caller binds it, it may be taken
 * (EADDRINUSE). Prefer binding 0, or {@link stablePort}.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Width of the band below the ephemeral range that {@link stablePort} picks from. */
const STABLE_BAND = 12_000;
/** Picks tried before giving up. */
const STABLE_ATTEMPTS = 50;

/**
 * The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`, Linux;
 * 32768 elsewhere or when unreadable: the Linux default, and IANA's 49152 lies above it).
 */
export function ephemeralLow(): number {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 1024) return low;
  } catch { /* not Linux */ }
  return 32_768;
}

/**
 * A port for a server that is given its number in advance: random in the band just below the
 * kernel's ephemeral range, and free when probed. The kernel never hands out such a port on its
 * own (neither to `listen(0)` nor to an outgoing connection), so only another explicit bind of
 * the same number (one pick in {@link STABLE_BAND}) could take it before the caller binds it.
 * @throws Error when {@link STABLE_ATTEMPTS} random picks were all in use.
 */
export async function stablePort(): Promise<number> {
  const high = ephemeralLow();
  const low = Math.max(1025, high - STABLE_BAND);
  for (let i = 0; i < STABLE_ATTEMPTS; i++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await canBind(port)) return port;
  }
  throw new Error(`no free port found in ${low}-${high - 1} after ${STABLE_ATTEMPTS} picks`);
}

/** True when `port` on 127.0.0.1 could be bound just now. */
function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** The port a listening `net`/`http` server got (after `listen(0)`). @throws when it is not listening on TCP. */
export function boundPort(server: net.Server): number {
  const a = server.address();
  if (a === null || typeof a === 'string') throw new Error('server is not listening on a TCP port');
  return a.port;
}
