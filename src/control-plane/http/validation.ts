/**
 * Schema validation of management requests on ajv, with failures worded as
 * PostHog's DRF serializers word them (research/posthog-management-api.md §5.4): the first
 * failure becomes `{type: 'validation_error', code, detail, attr}` where `attr` is the field
 * (nested paths joined with `__`, as exceptions-hog does).
 *
 * Bodies are validated as sent (no type coercion, nothing removed, no defaults written);
 * query strings are coerced (`?limit=5` is the integer 5), as DRF's query fields parse text.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { errors, type ApiError } from '../../errors.js';
import { pyType } from '../../json-shapes.js';

// ajv-formats ships CommonJS with `exports.default`; under NodeNext the default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

/** The request part a schema validates (fastify's `httpPart`). */
export type RequestPart = 'body' | 'querystring' | 'params' | 'headers';

function newAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ allErrors: false, verbose: true, strict: false, coerceTypes: coerce ? 'array' : false, useDefaults: false, removeAdditional: false });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = newAjv(false);
const queryAjv = newAjv(true);

/** Compiles `schema` for `part`: bodies and params strictly, query strings with coercion. */
export function compileValidator(schema: Record<string, unknown>, part: RequestPart): ValidateFunction {
  return (part === 'querystring' ? queryAjv : bodyAjv).compile(schema);
}

/** A validator as fastify calls it: true when valid, else false with ajv's `errors` on the function. */
export interface LazyValidator { (data: unknown): boolean; errors?: ErrorObject[] | null }

/**
 * {@link compileValidator}, deferred to the first request the route validates: compiling every
 * route's schemas cost a fifth of the API's start-up, and most routes of a process are never
 * called (a test suite, a replica). The compiled function is kept; its `errors` are copied to
 * the returned function after each call, where fastify reads them.
 */
export function lazyValidator(schema: Record<string, unknown>, part: RequestPart): LazyValidator {
  let compiled: ValidateFunction | null = null;
  const validate: LazyValidator = (data) => {
    compiled ??= compileValidator(schema, part);
    const ok = compiled(data) as boolean;
    validate.errors = compiled.errors;
    return ok;
  };
  return validate;
}

/** `/filters/groups/0` → `filters__groups__0` (exceptions-hog's attr). */
function attrOf(instancePath: string, extra?: string): string | null {
  const parts = instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  return parts.length === 0 ? null : parts.join('__');
}

const TYPE_MESSAGES: Record<string, (value: unknown) => [string, string]> = {
  boolean: () => ['Must be a valid boolean.', 'invalid'],
  integer: () => ['A valid integer is required.', 'invalid'],
  number: () => ['A valid number is required.', 'invalid'],
  string: () => ['Not a valid string.', 'invalid'],
  array: (v) => [`Expected a list of items but got type "${pyType(v)}".`, 'not_a_list'],
  object: (v) => [`Expected a dictionary of items but got type "${pyType(v)}".`, 'not_a_dict'],
};

/** DRF's wording of one ajv failure: [detail, code, attr]. */
function describe(e: ErrorObject, part: RequestPart): [string, string, string | null] {
  const attr = attrOf(e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return ['This field is required.', 'required', attrOf(e.instancePath, String(p.missingProperty))];
    case 'type': {
      const expected = String(Array.isArray(p.type) ? (p.type as string[]).find((t) => t !== 'null') : p.type);
      if (attr === null && part === 'body' && expected === 'object') {
        return [`Invalid data. Expected a dictionary, but got ${pyType(e.data)}.`, 'invalid_input', null];
      }
      if (e.data === null) return ['This field may not be null.', 'null', attr];
      const [detail, code] = (TYPE_MESSAGES[expected] ?? (() => [e.message ?? 'Invalid value.', 'invalid_input']))(e.data);
      return [detail, code, attr];
    }
    case 'minimum': return [`Ensure this value is greater than or equal to ${String(p.limit)}.`, 'min_value', attr];
    case 'maximum': return [`Ensure this value is less than or equal to ${String(p.limit)}.`, 'max_value', attr];
    case 'minLength':
      return Number(p.limit) === 1 ? ['This field may not be blank.', 'blank', attr]
        : [`Ensure this field has at least ${String(p.limit)} characters.`, 'min_length', attr];
    case 'maxLength': return [`Ensure this field has no more than ${String(p.limit)} characters.`, 'max_length', attr];
    case 'minItems': return [`Ensure this field has at least ${String(p.limit)} elements.`, 'min_length', attr];
    case 'maxItems': return [`Ensure this field has no more than ${String(p.limit)} elements.`, 'max_length', attr];
    case 'enum': return [`"${e.data === null ? '' : String(e.data)}" is not a valid choice.`, 'invalid_choice', attr];
    case 'const': return [`"${String(e.data)}" is not a valid choice.`, 'invalid_choice', attr];
    case 'format':
      if (p.format === 'date-time' || p.format === 'date') {
        return ['Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].', 'invalid', attr];
      }
      if (p.format === 'uuid') return ['Must be a valid UUID.', 'invalid', attr];
      return [`Enter a valid ${String(p.format)}.`, 'invalid', attr];
    case 'additionalProperties':
      return [`Unknown field "${String(p.additionalProperty)}".`, 'invalid_input', attrOf(e.instancePath, String(p.additionalProperty))];
    default:
      return [e.message ?? 'Invalid value.', 'invalid_input', attr];
  }
}

/**
 * The ApiError for a failed validation of `part`. A malformed path parameter means the
 * resource cannot exist, so it is a 404 (PostHog routes ids by pattern); everything else is a
 * 400 naming the field.
 */
export function validationError(failures: readonly ErrorObject[], part: RequestPart): ApiError {
  if (part === 'params') return errors.notFound();
  const first = failures[0];
  if (!first) return errors.validation('Invalid input.');
  const [detail, code, attr] = describe(first, part);
  return errors.validation(detail, attr, code);
}
