/**
 * The console's client of the management API: the personal API key lives in sessionStorage (the
 * tab's session, gone when it closes), every call sends it as a Bearer token to the same origin,
 * and PostHog's error body `{type, code, detail, attr}` becomes an {@link ApiFailure}.
 */

const KEY = 'switchyard.personalApiKey';
const PROJECT = 'switchyard.projectId';

/** An error answer of the API. */
export class ApiFailure extends Error {
  constructor(readonly status: number, readonly detail: string, readonly attr: string | null) {
    super(attr ? `${attr}: ${detail}` : detail);
  }
}

/** The signed-in personal API key, or null. */
export function storedKey(): string | null { return sessionStorage.getItem(KEY); }
/** Id of the project the console works in (the key's first project; 0 before sign-in). */
export function projectId(): number { return Number(sessionStorage.getItem(PROJECT) ?? 0); }

/** Signs in: checks the key by listing its projects and keeps the first. @throws ApiFailure. */
export async function signIn(key: string): Promise<void> {
  const res = await fetch('/api/projects/', { headers: { authorization: `Bearer ${key}` } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiFailure(res.status, body.detail ?? `HTTP ${res.status}`, body.attr ?? null);
  const first = body.results?.[0];
  if (!first) throw new ApiFailure(403, 'This key sees no project.', null);
  sessionStorage.setItem(KEY, key);
  sessionStorage.setItem(PROJECT, String(first.id));
}

/** Forgets the key and the project (this tab only). */
export function signOut(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(PROJECT);
}

/** Calls `path` (relative to the project when it starts with `/p/`). @throws ApiFailure. */
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const url = path.startsWith('/p/') ? `/api/projects/${projectId()}${path.slice(2)}` : path;
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${storedKey() ?? ''}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const parsed = text === '' ? null : JSON.parse(text);
  if (!res.ok) throw new ApiFailure(res.status, parsed?.detail ?? parsed?.error ?? `HTTP ${res.status}`, parsed?.attr ?? null);
  return parsed as T;
}
