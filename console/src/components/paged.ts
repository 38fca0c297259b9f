/**
 * A list page of the management API read page by page: the first page from `path`, then each
 * further page from the answer's `next` link (PostHog's `{count, next, previous, results}`
 * envelope; limit/offset paging), so lists are never cut at one page. `next` is absolute; only
 * its path and query are followed, so the console stays on its own origin.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';

interface Envelope<T> { count?: number; next: string | null; results: T[] }

/** Rows loaded so far, the total (`count`, when the API gives it), and `more()` while `hasMore`. */
export interface Paged<T> { rows: T[]; count: number | null; hasMore: boolean; loading: boolean; error: string | null; more(): void; reload(): void }

function local(next: string): string {
  const u = new URL(next, location.origin);
  return u.pathname + u.search;
}

/** Loads `path` (an `/p/…` or `/api/…` path); reloads from the first page when `deps` change. */
export function usePaged<T>(path: string, deps: unknown[] = []): Paged<T> {
  const [rows, setRows] = useState<T[]>([]);
  const [count, setCount] = useState<number | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true); setError(null);
    api<Envelope<T>>('GET', path).then((b) => {
      if (!live) return;
      setRows(b.results); setCount(b.count ?? null); setNext(b.next); setLoading(false);
    }, (e: Error) => { if (live) { setError(e.message); setLoading(false); } });
    return () => { live = false; };
  }, [...deps, tick]);
  const more = () => {
    if (!next || loading) return;
    setLoading(true);
    api<Envelope<T>>('GET', local(next)).then((b) => {
      setRows((r) => [...r, ...b.results]); setNext(b.next); setLoading(false);
    }, (e: Error) => { setError(e.message); setLoading(false); });
  };
  return { rows, count, hasMore: next !== null, loading, error, more, reload: () => setTick((t) => t + 1) };
}
