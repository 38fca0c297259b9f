/**
 * HTTP requests on a new TCP connection each (`agent: false`, `Connection: close`), so a server
 * with several IO threads on one port gets each request wherever the kernel puts the connection.
 */
import http from 'node:http';

/** One request; `body` is sent as JSON. Resolves with the status and the text; rejects on a network error. */
export function onNewConnection(url: string, method = 'GET', body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(url, { method, agent: false, headers: { connection: 'close', ...(data ? { 'content-type': 'application/json' } : {}), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(data);
  });
}
