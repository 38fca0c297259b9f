/**
 * The body of `POST /api/projects/<id>/scheduled_changes/`, as PostHog's ScheduledChangeSerializer
 * validates it (posthog/api/scheduled_change.py), field by field in its order:
 * `record_id` (CharField, max 200), `model_name` (ChoiceField; only `FeatureFlag` here: this
 * service has no surveys), `payload` (any JSON but null: PostHog checks its shape only when it
 * applies the change, and so does this service), `scheduled_at` (DateTimeField, ISO 8601, stored
 * in UTC; a zone-less value is UTC), then the recurrence rules of a new schedule: `is_recurring`
 * must be false here (recurring schedules are not supported), and with it false PostHog refuses
 * a `recurrence_interval` or `cron_expression`. Read-only fields are ignored.
 * @throws ApiError 400 validation_error naming the field in `attr`.
 */
import { errors } from '../../errors.js';
import { pyType } from '../../json-shapes.js';
import { boolField, charField } from '../http/drf-fields.js';

/** Models a change may target (PostHog's ScheduledChange.AllowedModels, less Survey). */
export const MODEL_NAMES = ['FeatureFlag'] as const;

/** A validated create body. */
export interface ScheduledChangeInput { record_id: string; model_name: string; payload: unknown; scheduled_at: Date }

const DATETIME_FORMAT_HINT = 'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].';
/** ISO 8601 as DRF's DateTimeField parses it (a bare date is midnight). */
const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function required(b: Record<string, unknown>, attr: string): unknown {
  if (b[attr] === undefined) throw errors.required(attr);
  return b[attr];
}

/** DRF DateTimeField: ISO 8601; without an offset the value is UTC (PostHog's TIME_ZONE). */
function dateTime(v: unknown, attr: string): Date {
  if (v === null) throw errors.validation('This field may not be null.', attr, 'null');
  if (typeof v === 'string' && ISO_DATETIME.test(v.trim())) {
    const s = v.trim().replace(' ', 'T');
    const d = new Date(s.length === 10 ? `${s}T00:00:00Z` : /(Z|[+-]\d{2}:?\d{2})$/.test(s) ? s : `${s}Z`);
    if (!Number.isNaN(d.getTime())) return d;
  }
  throw errors.validation(DATETIME_FORMAT_HINT, attr, 'invalid');
}

/** Validates a create body. */
export function parseScheduledChange(body: unknown): ScheduledChangeInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw errors.validation(`Invalid data. Expected a dictionary, but got ${pyType(body)}.`, null);
  }
  const b = body as Record<string, unknown>;
  const recordId = charField(required(b, 'record_id'), 'record_id', { allowBlank: false, maxLength: 200 });
  const model = required(b, 'model_name');
  if (typeof model !== 'string' || !(MODEL_NAMES as readonly string[]).includes(model)) {
    throw errors.validation(`"${model === null ? '' : String(model)}" is not a valid choice.`, 'model_name', 'invalid_choice');
  }
  const payload = required(b, 'payload');
  if (payload === null) throw errors.validation('This field may not be null.', 'payload', 'null');
  const scheduledAt = dateTime(required(b, 'scheduled_at'), 'scheduled_at');
  if (b.is_recurring !== undefined && boolField(b.is_recurring, 'is_recurring') === true) {
    throw errors.validation('Recurring schedules are not supported: schedule each change once.', 'is_recurring', 'invalid');
  }
  for (const attr of ['recurrence_interval', 'cron_expression']) {
    if (b[attr] !== undefined && b[attr] !== null && b[attr] !== '') {
      throw errors.validation(`Cannot set ${attr} when is_recurring is false for new schedules.`, attr, 'invalid');
    }
  }
  return { record_id: recordId, model_name: model, payload, scheduled_at: scheduledAt };
}
