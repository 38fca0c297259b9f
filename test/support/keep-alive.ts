/**
 * A keep-alive HTTP client for tests that send many requests to one server (a sweep of /flags
 * over thousands of ids, a load loop): node:http over a pool of reused connections. Per request
 * it costs about a third of `fetch` (undici) and half of a new connection per request, on the
 * test's side and on the server's. Idle sockets do not hold the process open (node:http unrefs
 * them); `close()` ends them. Use it only while the server is known to be up: a socket the server
 * closes between requests is a network error for the request that picks it.
 */
import http from 'node:http';

/** An answer: status, headers, text, and its JSON (parsed on first read; undefined when the text is not JSON). */
export interface KeepAliveReply { status: number; headers: http.IncomingHttpHeaders; text: string; readonly body: any }

/** Raised when a request passes its `timeoutMs`. */
export class KeepAliveTimeout extends Error {}

/** What {@link KeepAliveClient.request} sends: a body (JSON-encoded unless a string), headers, a time limit in ms. */
export interface KeepAliveRequest { body?: unknown; headers?: Record<string, string>; timeoutMs?: number }

/** A client over at most `maxSockets` connections per host. */
export interface KeepAliveClient {
  /**
   * Sends `method url` and reads the whole answer. A body is sent as `application/json` unless
   * `headers` name another content type. Rejects with {@link KeepAliveTimeout} past `timeoutMs`
   * (none by default), or with the network error.
   */
  request(method: string, url: string, req?: KeepAliveRequest): Promise<KeepAliveReply>;
  /** `request('POST', url, { body, headers })`. */
  post(url: string, body: unknown, headers?: Record<string, string>): Promise<KeepAliveReply>;
  /** Closes every connection. */
  close(): void;
}

/** A reply whose `body` is parsed from `text` when first read. */
function reply(status: number, headers: http.IncomingHttpHeaders, text: string): KeepAliveReply {
  let parsed: { value: unknown } | undefined;
  return {
    status, headers, text,
    get body() {
      if (!parsed) {
        try { parsed = { value: text ? JSON.parse(text) : undefined }; } catch { parsed = { value: undefined }; }
      }
      return parsed.value;
    },
  };
}

/** A client with its own agent (`maxSockets`: concurrent connections per host, default 50). */
export function keepAliveClient(maxSockets = 50): KeepAliveClient {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const client: KeepAliveClient = {
    request(method, url, { body, headers = {}, timeoutMs } = {}) {
      const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      const sent = data === undefined ? headers : { 'content-type': 'application/json', ...headers };
      return new Promise((resolve, reject) => {
        const req = http.request(url, { method, agent, headers: sent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(timer);
            resolve(reply(res.statusCode ?? 0, res.headers, Buffer.concat(chunks).toString('utf8')));
          });
          res.on('error', (e) => { clearTimeout(timer); reject(e); });
        });
        const timer = timeoutMs === undefined ? undefined : setTimeout(() => req.destroy(new KeepAliveTimeout(`no answer in ${timeoutMs} ms`)), timeoutMs);
        req.on('error', (e) => { clearTimeout(timer); reject(e); });
        req.end(data);
      });
    },
    post: (url, body, headers) => client.request('POST', url, { body, headers }),
    close() { agent.destroy(); },
  };
  return client;
}
