/**
 * Raw HTTP clients for hostile-input tests, where `fetch` hides what matters: bytes written on a
 * bare TCP socket (HTTP/1.0, a missing Host header, headers trickled a byte at a time) and large
 * bodies whose early refusal (413 before the upload ends) must still be read.
 */
import net from 'node:net';
import http from 'node:http';

/** What a raw exchange saw, times in ms from the connection's start; null = did not happen. */
export interface RawOutcome {
  /** First response byte. */
  firstByteMs: number | null;
  /** The server closed (FIN or reset). */
  closedMs: number | null;
  /** The status line's code, when a response started. */
  status: number | null;
  /** The client gave up at its deadline (neither an answer nor a close came). */
  timedOut: boolean;
}

/**
 * Opens a TCP connection to `host:port`, writes `payload`, and waits for the first response byte
 * or the server's close, at most `deadlineMs`; the socket is always destroyed before resolving.
 */
export function rawExchange(host: string, port: number, payload: string, deadlineMs: number): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    const since = () => performance.now() - started;
    const out: RawOutcome = { firstByteMs: null, closedMs: null, status: null, timedOut: false };
    const socket = net.connect({ host, port });
    let text = '';
    const finish = () => { clearTimeout(timer); socket.destroy(); resolve(out); };
    const timer = setTimeout(() => { out.timedOut = true; finish(); }, deadlineMs);
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (d: Buffer) => {
      out.firstByteMs ??= since();
      text += d.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (m) { out.status = Number(m[1]); finish(); }
    });
    const closed = () => { out.closedMs ??= since(); finish(); };
    socket.on('end', closed);
    socket.on('error', closed);
    socket.on('close', closed);
  });
}

/**
 * A slowloris client: sends `head` (an unfinished request head) and then one byte of a never-
 * ending header every `intervalMs`, until the server closes the connection or `deadlineMs`
 * passes. @returns when (ms) the server closed it and the status of any response it sent first.
 */
export function slowloris(host: string, port: number, head: string, intervalMs: number, deadlineMs: number): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    const out: RawOutcome = { firstByteMs: null, closedMs: null, status: null, timedOut: false };
    const socket = net.connect({ host, port });
    let text = '';
    let drip: NodeJS.Timeout | undefined;
    const finish = () => { clearTimeout(timer); clearInterval(drip); socket.destroy(); resolve(out); };
    const timer = setTimeout(() => { out.timedOut = true; finish(); }, deadlineMs);
    socket.on('connect', () => {
      socket.write(head + 'X-Slow: ');
      drip = setInterval(() => { if (!socket.destroyed) socket.write('a'); }, intervalMs);
    });
    socket.on('data', (d: Buffer) => {
      out.firstByteMs ??= performance.now() - started;
      text += d.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (m) out.status = Number(m[1]);
    });
    const closed = () => { out.closedMs ??= performance.now() - started; finish(); };
    socket.on('end', closed);
    socket.on('error', closed);
    socket.on('close', closed);
  });
}

/** The answer to a large upload: status (null when the connection failed before any), time in ms. */
export interface UploadOutcome { status: number | null; ms: number; text: string; error: string | null }

/**
 * POSTs `body` to `url` on a new connection and resolves with the first response, even when the
 * server answers (e.g. 413) and closes before the upload ends; a network error without a
 * response or the client's `deadlineMs` gives `status: null` and the error's message.
 */
export function upload(url: string, body: Buffer | string, headers: Record<string, string>, deadlineMs: number): Promise<UploadOutcome> {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const done = (o: Omit<UploadOutcome, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ ...o, ms: performance.now() - started });
    };
    const data = typeof body === 'string' ? Buffer.from(body) : body;
    const req = http.request(url, {
      method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(data.length), connection: 'close', ...headers },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { if (text.length < 4096) text += c; });
      res.on('end', () => done({ status: res.statusCode ?? null, text, error: null }));
      res.on('error', () => done({ status: res.statusCode ?? null, text, error: null }));
    });
    const timer = setTimeout(() => done({ status: null, text: '', error: `no answer within ${deadlineMs} ms` }), deadlineMs);
    req.on('error', (e) => done({ status: null, text: '', error: e.message }));
    req.end(data);
  });
}
