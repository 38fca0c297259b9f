/**
 * F10 `GET …/feature_flags/<id or key>/remote_config` (research/posthog-management-api.md §2.5),
 * served by the control plane and by nodes (posthog-node's `getRemoteConfigPayload` calls its own
 * host, a node): a remote-configuration flag's `payloads["true"]`, as stored (a JSON text, so the
 * body is a JSON string literal), or `null`; nothing for a flag that is missing or not a remote
 * configuration (404, empty body). Pure.
 */

/** The part of a flag F10 reads. */
export interface RemoteConfigFlag { key: string; id: number; filters: Record<string, unknown>; is_remote_configuration: boolean; deleted?: boolean }

/**
 * The flag `idOrKey` names among `flags` (a numeric segment is an id, anything else a key; a live
 * flag wins over a deleted one with the same key), or undefined.
 */
export function findByIdOrKey<F extends RemoteConfigFlag>(flags: readonly F[], idOrKey: string): F | undefined {
  const byId = /^\d{1,15}$/.test(idOrKey);
  let found: F | undefined;
  for (const f of flags) {
    if (byId ? f.id !== Number(idOrKey) : f.key !== idOrKey) continue;
    if (found === undefined || (found.deleted === true && f.deleted !== true)) found = f;
  }
  return found;
}

/** The F10 answer for `flag`: status and body text (empty for 404). */
export function remoteConfigAnswer(flag: RemoteConfigFlag | undefined): { status: 200 | 404; body: string } {
  if (flag === undefined || !flag.is_remote_configuration) return { status: 404, body: '' };
  const payloads = flag.filters.payloads;
  const stored = typeof payloads === 'object' && payloads !== null ? (payloads as Record<string, unknown>).true : undefined;
  return { status: 200, body: JSON.stringify(stored === undefined ? null : stored) };
}
