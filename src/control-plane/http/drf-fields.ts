/**
 * Django REST framework field rules that PostHog's serializers apply, shared by the resources'
 * validators: the same inputs coerce and the same messages and codes come back (research
 * posthog-management-api.md §1.2). Each throws ApiError 400 `validation_error` with `attr`.
 */
import { pyType } from '../../json-shapes.js';
import { errors } from '../../errors.js';

/** DRF BooleanField's accepted spellings. */
const TRUE_VALUES = new Set<unknown>(['t', 'T', 'y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON', '1', 1, true]);
const FALSE_VALUES = new Set<unknown>(['f', 'F', 'n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF', '0', 0, false]);

/** DRF CharField: strings (trimmed) and numbers; null / blank rejected unless allowed. */
export function charField(v: unknown, attr: string, opts: { allowBlank: boolean; maxLength?: number }): string {
  if (v === null) throw errors.validation('This field may not be null.', attr, 'null');
  if (typeof v !== 'string' && typeof v !== 'number') throw errors.validation('Not a valid string.', attr);
  const s = String(v).trim();
  if (s === '' && !opts.allowBlank) throw errors.validation('This field may not be blank.', attr, 'blank');
  if (opts.maxLength !== undefined && s.length > opts.maxLength) {
    throw errors.validation(`Ensure this field has no more than ${opts.maxLength} characters.`, attr, 'max_length');
  }
  return s;
}

/** DRF BooleanField (`nullable` for PostHog's ClassicBehaviorBooleanFieldSerializer fields). */
export function boolField(v: unknown, attr: string, nullable = false): boolean | null {
  if (v === null) {
    if (nullable) return null;
    throw errors.validation('This field may not be null.', attr, 'null');
  }
  if (TRUE_VALUES.has(v)) return true;
  if (FALSE_VALUES.has(v)) return false;
  throw errors.validation('Must be a valid boolean.', attr);
}

/** DRF ListField: a JSON array (not null). */
export function listField(v: unknown, attr: string): unknown[] {
  if (v === null) throw errors.validation('This field may not be null.', attr, 'null');
  if (!Array.isArray(v)) throw errors.validation(`Expected a list of items but got type "${pyType(v)}".`, attr, 'not_a_list');
  return v;
}

/** PostHog's tag normalisation (`tagify`): trimmed, lower-cased; blanks dropped; duplicates removed, first kept. */
export function tagify(values: unknown[], attr: string): string[] {
  const out: string[] = [];
  for (const [i, t] of values.entries()) {
    if (typeof t !== 'string' && typeof t !== 'number') throw errors.validation('Not a valid string.', `${attr}__${i}`);
    const s = String(t).trim().toLowerCase();
    if (s !== '' && !out.includes(s)) out.push(s);
  }
  return out;
}

