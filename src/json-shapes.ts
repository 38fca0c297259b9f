/**
 * Shapes of parsed JSON values, shared by the validators: whether a value is a JSON object, and the
 * Python type name DRF prints in its messages (`Expected a list of items but got type "str".`).
 * Pure; used by the control plane's services and the statistics input reader.
 */

/** A JSON object (not null, not an array). */
export type JsonObject = Record<string, unknown>;

/** True for a JSON object: neither null nor an array. */
export function isJsonObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Python's name for a JSON value's type as DRF prints it: `list`, `dict`, `str`, `bool`, `int`,
 * `float`, and `NoneType` for null (and for a missing value).
 */
export function pyType(v: unknown): string {
  if (Array.isArray(v)) return 'list';
  if (v === null || v === undefined) return 'NoneType';
  if (typeof v === 'object') return 'dict';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  return Number.isInteger(v) ? 'int' : 'float';
}
