/**
 * LISTEN subscriptions of the change feed (change-feed.ts), renewable after the database was
 * lost. Two kinds:
 * - {@link listenDedicated}: LISTEN on a reserved connection of a one-connection pool of its
 *   own; the connection closing (server gone, failover) reports `lost` at once, and `renew()`
 *   ends that pool and LISTENs on a new one. What the control plane uses.
 * - {@link listenShared}: postgres.js's `sql.listen` on a shared pool (it re-LISTENs after a
 *   reconnect by itself but gives up silently when that fails, and does not report the loss);
 *   `renew()` unlistens and listens again. For callers that have no URL to open a pool with.
 */
import type postgres from 'postgres';
import type { Sql } from '../db/connect.js';

/** What a subscription reports. */
export interface ListenEvents {
  /** A notification arrived on the channel. */
  notify(): void;
  /** The listening connection closed: notifications may be missed until renew(). */
  lost(): void;
}

/** A running subscription. */
export interface Subscription {
  /** Drops the subscription and LISTENs again. @throws when LISTEN fails (the old one is dropped regardless). */
  renew(): Promise<void>;
  close(): Promise<void>;
}

/** Makes the pool a dedicated subscription listens on, passing it postgres.js's `onnotify` and `onclose` (db/connect.ts `connect`). */
export type ListenPoolFactory = (handlers: { onnotify(channel: string, payload: string): void; onclose(): void }) => Sql;

/** `LISTEN "<channel>"` text (identifier quoted). */
function listenStatement(channel: string): string {
  return `LISTEN "${channel.replace(/"/g, '""')}"`;
}

/** LISTENs on `channel` on a pool made by `open` (see the module doc). @throws when the first LISTEN fails. */
export async function listenDedicated(open: ListenPoolFactory, channel: string, ev: ListenEvents): Promise<Subscription> {
  let current: { pool: Sql; conn: postgres.ReservedSql<Record<string, never>> } | null = null;
  let closed = false;
  const subscribe = async (): Promise<void> => {
    const pool: Sql = open({
      onnotify: (c) => { if (c === channel) ev.notify(); },
      // Only the live subscription's connection counts (an ended one closes too).
      onclose: () => { if (!closed && current?.pool === pool) { current = null; ev.lost(); } },
    });
    try {
      const conn = await pool.reserve();
      await conn.unsafe(listenStatement(channel));
      current = { pool, conn };
    } catch (e) {
      await pool.end({ timeout: 1 }).catch(() => {});
      throw e;
    }
  };
  const drop = async (): Promise<void> => {
    const old = current;
    current = null;
    if (old) { old.conn.release(); await old.pool.end({ timeout: 1 }).catch(() => {}); }
  };
  await subscribe();
  return {
    async renew() { await drop(); if (!closed) await subscribe(); },
    async close() { closed = true; await drop(); },
  };
}

/** LISTENs on `channel` through `sql.listen` (see the module doc). @throws when the first LISTEN fails. */
export async function listenShared(sql: Sql, channel: string, ev: ListenEvents): Promise<Subscription> {
  const notify = (): void => ev.notify();
  let listener = await sql.listen(channel, notify, notify);
  return {
    async renew() {
      await listener.unlisten().catch(() => {});
      listener = await sql.listen(channel, notify, notify);
    },
    async close() { await listener.unlisten().catch(() => {}); },
  };
}
