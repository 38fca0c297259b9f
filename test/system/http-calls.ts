/**
 * JSON over HTTP for the system tests (fetch, 15 s timeout each): `post`, `get` and `flags`
 * (`POST /flags?v=2`). Kept apart from support.ts so that a test driving only child processes
 * does not load the product's modules into its own process; support.ts re-exports them.
 */

/** A JSON response. */
export interface Reply { status: number; body: any; text: string; headers: Headers }

/** The reply of `res`: its text, parsed when it is JSON. */
async function readReply(res: Response): Promise<Reply> {
  const text = await res.text();
  let parsed: unknown;
  try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

/** `POST url` with `body` as JSON (a string or bytes as they are); the reply parsed when it is JSON. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return readReply(await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body as BodyInit : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  }));
}

/** `GET url`; the reply parsed when it is JSON. */
export async function get(url: string): Promise<Reply> {
  return readReply(await fetch(url, { signal: AbortSignal.timeout(15_000) }));
}

/** `POST /flags?v=2` on `nodeUrl`. */
export function flags(nodeUrl: string, token: string, distinctId: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  return post(`${nodeUrl}/flags?v=2`, { api_key: token, distinct_id: distinctId, ...extra });
}
