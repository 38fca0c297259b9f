/**
 * Request/response messages between the node's main thread and its IO threads
 * (http/io-threads.ts): `call(op, payload)` posts `{rpc: id, op, payload}` and resolves with the
 * other side's `{reply: id, value}` or rejects with its `{reply: id, error}`; `serve` answers the
 * calls of the other side. Errors cross as `{name, message, data}` so a known error (the outbox's
 * OutboxFullError) can be rebuilt. One-way notices are plain `{notice, ...}` messages.
 */
import type { MessagePort, Worker } from 'node:worker_threads';

/** An error as it crosses threads: its name, message and own enumerable fields (`data`). */
export interface WireError { name: string; message: string; data?: Record<string, unknown> }

type Port = Pick<MessagePort | Worker, 'postMessage' | 'on' | 'off'>;
type Handler = (payload: unknown) => unknown;

/** One side of the channel over `port` (a Worker on the main thread, parentPort in the thread). */
export class ThreadRpc {
  private next = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: WireError): void }>();
  private readonly handlers = new Map<string, Handler>();
  private readonly noticeHandlers = new Map<string, (message: Record<string, unknown>) => void>();
  private readonly listener = (m: Record<string, unknown>): void => this.receive(m);
  private closedReason: string | null = null;

  constructor(private readonly port: Port) {
    port.on('message', this.listener);
  }

  /** Calls `op` on the other side. Rejects with a {@link WireError}. */
  call<T>(op: string, payload?: unknown, transfer?: ArrayBuffer[]): Promise<T> {
    if (this.closedReason !== null) return Promise.reject({ name: 'Error', message: this.closedReason } satisfies WireError);
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.port.postMessage({ rpc: id, op, payload }, transfer as never);
    });
  }

  /** Answers the other side's calls of `op` (the handler may be async; a throw becomes a WireError). */
  serve(op: string, handler: Handler): void {
    this.handlers.set(op, handler);
  }

  /** Posts a one-way notice. */
  notify(notice: string, body: Record<string, unknown> = {}): void {
    this.port.postMessage({ notice, ...body });
  }

  /** Handles the other side's notices named `notice`. */
  onNotice(notice: string, handler: (message: Record<string, unknown>) => void): void {
    this.noticeHandlers.set(notice, handler);
  }

  /** Rejects every pending and later call (the other side is gone) and stops listening. */
  close(reason = 'thread stopped'): void {
    this.closedReason = reason;
    this.port.off('message', this.listener);
    for (const p of this.pending.values()) p.reject({ name: 'Error', message: reason });
    this.pending.clear();
  }

  private receive(m: Record<string, unknown>): void {
    if (typeof m.reply === 'number') {
      const p = this.pending.get(m.reply);
      if (p === undefined) return;
      this.pending.delete(m.reply);
      if (m.error !== undefined) p.reject(m.error as WireError); else p.resolve(m.value);
    } else if (typeof m.rpc === 'number') {
      const id = m.rpc;
      const handler = this.handlers.get(String(m.op));
      if (handler === undefined) {
        this.port.postMessage({ reply: id, error: { name: 'Error', message: `no handler for ${String(m.op)}` } });
        return;
      }
      Promise.resolve().then(() => handler(m.payload)).then(
        (value) => this.port.postMessage({ reply: id, value }),
        (e: unknown) => {
          const err = e as Error;
          // The error's own fields (e.g. OutboxFullError's maxBytes) travel as `data`.
          const data = err !== null && typeof err === 'object' ? { ...err } : undefined;
          this.port.postMessage({ reply: id, error: { name: err?.name ?? 'Error', message: err?.message ?? String(e), data } satisfies WireError });
        },
      );
    } else if (typeof m.notice === 'string') {
      this.noticeHandlers.get(m.notice)?.(m);
    }
  }
}
