/**
 * The optional probe listener of an evaluation node (`SWITCHYARD_PROBE_PORT`):
 * `GET`/`HEAD` `/_health`, `/_ready` and `/metrics` on node:http, answered exactly as on the
 * flags port (probes.ts). uWebSockets.js 20.30 never answers HTTP/1.0 requests nor HTTP/1.1
 * ones without a Host header, which is what HAProxy's default `option httpchk` and several
 * older load balancers send; node:http answers both. Like flagd's management port, it is a
 * separate port so probe traffic never competes with /flags. Off unless configured.
 */
import http from 'node:http';
import type { Logger } from 'pino';
import type { NodeHttpContext } from './context.js';
import { healthProbe, metricsProbe, readyProbe, type ProbeAnswer } from './probes.js';

/** A running probe listener. */
export interface ProbeServer {
  port: number;
  close(): Promise<void>;
}

const ROUTES: Readonly<Record<string, (ctx: NodeHttpContext) => ProbeAnswer | Promise<ProbeAnswer>>> = Object.freeze({
  '/_health': () => healthProbe(),
  '/_ready': readyProbe,
  '/metrics': metricsProbe,
});

/**
 * Listens on `host:port` (0 = any free port).
 * @throws Error when the port cannot be bound.
 */
export async function startProbeServer(ctx: NodeHttpContext, host: string, port: number, log: Logger): Promise<ProbeServer> {
  const server = http.createServer({ requireHostHeader: false }, async (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const route = Object.hasOwn(ROUTES, path) ? ROUTES[path]! : undefined;
    let a: ProbeAnswer;
    if (route === undefined) a = { status: 404, body: '{"type":"invalid_request","code":"not_found","detail":"Not found.","attr":null}', contentType: 'application/json' };
    else if (req.method !== 'GET' && req.method !== 'HEAD') a = { status: 405, body: '', contentType: 'text/plain' };
    else a = await Promise.resolve(route(ctx)).catch(() => ({ status: 500, body: '', contentType: 'text/plain' }));
    res.writeHead(a.status, { 'content-type': a.contentType, 'content-length': Buffer.byteLength(a.body), ...(a.status === 405 ? { allow: 'GET, HEAD' } : {}) });
    res.end(req.method === 'HEAD' ? undefined : a.body);
  });
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => { server.off('error', reject); resolve(); });
  });
  const bound = (server.address() as { port: number }).port;
  log.info({ port: bound }, 'evaluation node probe listener (HTTP/1.0 and Host-less health checks)');
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
