/**
 * Request bodies of `POST /api/projects/` and `PATCH /api/projects/<id>/`: PostHog's team
 * serializer fields this service stores — `name` (CharField, max 200, not blank), `timezone`
 * (ChoiceField of IANA zone names) and the remote-config settings (JSON booleans only, and
 * `property_matching_version` 1 or 2). Other fields are read-only here and ignored, as DRF
 * ignores read-only fields (`api_token` among them). Errors are PostHog's 400 with `attr`.
 */
import { errors } from '../../errors.js';
import { pyType } from '../../json-shapes.js';
import { PROJECT_BOOLEAN_SETTING_KEYS } from '../../contract/entities.js';
import { charField } from '../http/drf-fields.js';
import type { ProjectChanges } from './store.js';

/** Name of a project created without one (PostHog's Team `name` default). */
export const DEFAULT_PROJECT_NAME = 'Default project';
/** PostHog's Team.name max_length. */
const NAME_MAX_LENGTH = 200;

/** True for a zone name the runtime's tz database knows (`UTC`, `Europe/Berlin`, `US/Pacific`, …). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The fields a project body sets. @throws ApiError 400 for a body that is not an object or a bad field. */
export function parseProjectBody(body: unknown): ProjectChanges {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  }
  const b = body as Record<string, unknown>;
  const out: ProjectChanges = {};
  if (b.name !== undefined) out.name = charField(b.name, 'name', { allowBlank: false, maxLength: NAME_MAX_LENGTH });
  if (b.timezone !== undefined) {
    if (typeof b.timezone !== 'string' || !isTimeZone(b.timezone)) {
      throw errors.validation(`"${b.timezone === null ? '' : String(b.timezone)}" is not a valid choice.`, 'timezone', 'invalid_choice');
    }
    out.timezone = b.timezone;
  }
  for (const k of PROJECT_BOOLEAN_SETTING_KEYS) {
    const v = b[k];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw errors.validation('Must be a valid boolean.', k, 'invalid');
    out[k] = v;
  }
  const version = b.property_matching_version;
  if (version !== undefined) {
    if (version !== 1 && version !== 2) throw errors.validation('"property_matching_version" must be 1 or 2.', 'property_matching_version', 'invalid_choice');
    out.property_matching_version = version;
  }
  return out;
}
