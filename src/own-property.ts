/**
 * Own data properties for keys that come from public input: `o[k] = v` with
 * `k === '__proto__'` sets the object's prototype instead of adding a property, so the key is
 * lost (and, on a shared object, its prototype changed). Pure; used wherever objects are built
 * from client-chosen keys (capture cleaning, person and group property updates, evaluation's
 * merged property maps).
 */

/** Sets `o[k] = v` as an own, enumerable, writable property, whatever `k` is. */
export function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

/** True when `o` has an own property `k` (`k in o` would also see Object.prototype's). */
export function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}
