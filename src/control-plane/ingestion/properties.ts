/**
 * PostHog's person-property update rules for one event (plugin-server `person-state.ts`
 * `applyEventPropertyUpdates`): `$set_once` first (only keys not present), then `$set`
 * (overwrites), then `$unset` (a list of keys, or an object whose keys are removed).
 * Pure; used for persons and, with `$group_set`, for groups. Keys are own properties only:
 * `constructor` or `__proto__` are ordinary property names here.
 */
import { hasOwn, setOwn } from '../../own-property.js';
import { MAX_PROPERTIES_BYTES } from '../../limits.js';
import { isObject, type Properties } from '../../contract/events.js';

/** Structural equality for JSON values (property values compare by content). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Applies the event's `$set_once`, `$set` and `$unset` to `target` in place.
 * @returns true when `target` changed.
 */
export function applyPropertyUpdates(target: Properties, eventProperties: Properties): boolean {
  let changed = false;
  const setOnce = eventProperties.$set_once;
  if (isObject(setOnce)) {
    for (const key of Object.keys(setOnce)) {
      if (!hasOwn(target, key)) { setOwn(target, key, setOnce[key]); changed = true; }
    }
  }
  const set = eventProperties.$set;
  if (isObject(set)) changed = applySet(target, set) || changed;
  const unset = eventProperties.$unset;
  const keys = Array.isArray(unset) ? unset : isObject(unset) ? Object.keys(unset) : [];
  for (const key of keys) {
    if (typeof key === 'string' && hasOwn(target, key)) { delete target[key]; changed = true; }
  }
  return changed;
}

/** `$set` semantics: every key overwrites. @returns true when `target` changed. */
export function applySet(target: Properties, set: Properties): boolean {
  let changed = false;
  for (const key of Object.keys(set)) {
    if (!hasOwn(target, key) || !sameJson(target[key], set[key])) { setOwn(target, key, set[key]); changed = true; }
  }
  return changed;
}

/** True when the event carries any person-property update. */
export function hasPropertyUpdates(p: Properties): boolean {
  return isObject(p.$set) || isObject(p.$set_once) || Array.isArray(p.$unset) || isObject(p.$unset);
}

/** Counts updates refused by {@link withinPropertiesBound} (one per batch). */
export interface RefusedUpdates { count: number }

/**
 * True when `properties`, JSON-encoded, fit MAX_PROPERTIES_BYTES (60 events of
 * `$set {"blob": "x" × 1e6}` grew the control plane to gigabytes). Callers keep the previous
 * properties when false (the event itself is still stored).
 */
export function withinPropertiesBound(properties: Properties): boolean {
  return Buffer.byteLength(JSON.stringify(properties)) <= MAX_PROPERTIES_BYTES;
}
