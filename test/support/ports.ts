/** Free TCP ports on 127.0.0.1 for tests and benchmarks (each suite picks its own). */
import net from 'node:net';

/** Returns a port that was free a moment ago (bind to 0, read it, close). */
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
