/**
 * Event property filters as SQL over `events.properties` (alias `e`), for experiment exposure
 * criteria and metric sources, behavioural cohorts' `event_filters` and insights' `properties`:
 * `[{key, value, operator, type: "event"}]` ANDed, or a property group of AND/OR.
 * Operators: exact, is_not (value or list), is_set, is_not_set, icontains, not_icontains, regex,
 * not_regex, gt, gte, lt, lte (numeric). Other property types (person, cohort, element) are
 * refused: Switchyard's event store keeps event properties only.
 */
import { type JsonObject, isJsonObject } from '../../json-shapes.js';
import type { PendingQuery } from 'postgres';
import type { Handle } from '../db/connect.js';
import { errors } from '../../errors.js';

type Obj = JsonObject;
/** A SQL fragment to interpolate (its row type is irrelevant). */
type Fragment = PendingQuery<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NUMERIC = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/**
 * Whether `filters` filter nothing: what {@link eventFiltersSql} turns into `TRUE` without
 * reading a property (absent, an empty list, anything that is neither a list nor a group, or a
 * group whose members all filter nothing). Readers that do not keep event properties (the
 * per-person event times) may stand in for the events only then.
 */
export function filtersNothing(filters: unknown): boolean {
  if (isJsonObject(filters) && Array.isArray(filters.values) && (filters.type === 'AND' || filters.type === 'OR')) {
    return filters.values.every((v) => isJsonObject(v) && 'values' in v && filtersNothing(v));
  }
  return !Array.isArray(filters) || filters.length === 0;
}

/**
 * `filters` as one SQL fragment (`TRUE` when empty): a list of filters ANDed, or a PostHog
 * property group `{type: "AND"|"OR", values: [filter | group, ...]}` (nested as deep as given).
 * @throws ApiError 400 attr `attr`.
 */
export function eventFiltersSql(h: Handle, filters: unknown, attr: string): Fragment {
  if (isJsonObject(filters) && Array.isArray(filters.values) && (filters.type === 'AND' || filters.type === 'OR')) {
    const parts = filters.values.map((v) => eventFiltersSql(h, isJsonObject(v) && 'values' in v ? v : [v], attr));
    if (parts.length === 0) return h`TRUE`;
    const joiner = filters.type === 'OR' ? h` OR ` : h` AND `;
    return h`(${parts.reduce((a, b) => h`${a}${joiner}${b}`)})`;
  }
  const list = Array.isArray(filters) ? filters : [];
  let out = h`TRUE`; // no filter reads no property: index-only scans stay possible
  for (const f of list) {
    if (!isJsonObject(f) || typeof f.key !== 'string') throw errors.validation('Each property filter needs a string "key".', attr);
    const type = f.type ?? 'event';
    if (type !== 'event' && type !== 'feature') throw errors.validation(`Property filters of type "${String(type)}" are not supported here (event properties only).`, attr);
    const key = f.key;
    const text = h`(e.properties->>${key})`;
    const values = (Array.isArray(f.value) ? f.value : [f.value]).filter((v) => v !== null && v !== undefined).map(String);
    const op = String(f.operator ?? 'exact');
    let cond;
    switch (op) {
      case 'exact': cond = h`${text} = ANY(${h.array(values)}::text[])`; break;
      case 'is_not': cond = h`(${text} IS NULL OR NOT ${text} = ANY(${h.array(values)}::text[]))`; break;
      case 'is_set': cond = h`e.properties ? ${key}`; break;
      case 'is_not_set': cond = h`NOT e.properties ? ${key}`; break;
      case 'icontains': cond = h`${text} ILIKE ${`%${(values[0] ?? '').replace(/[\\%_]/g, (c) => `\\${c}`)}%`}`; break;
      case 'not_icontains': cond = h`(${text} IS NULL OR ${text} NOT ILIKE ${`%${(values[0] ?? '').replace(/[\\%_]/g, (c) => `\\${c}`)}%`})`; break;
      case 'regex': cond = h`${text} ~ ${values[0] ?? ''}`; break;
      case 'not_regex': cond = h`(${text} IS NULL OR ${text} !~ ${values[0] ?? ''})`; break;
      case 'gt': case 'gte': case 'lt': case 'lte': {
        const n = Number(values[0]);
        if (!Number.isFinite(n)) throw errors.validation(`Operator ${op} needs a number.`, attr);
        cond = h`(CASE WHEN ${text} ~ '^\\s*-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?\\s*$' THEN (${text})::float8 ${h.unsafe(NUMERIC[op])} ${n} ELSE false END)`;
        break;
      }
      default:
        throw errors.validation(`Property operator "${op}" is not supported here.`, attr);
    }
    out = h`${out} AND ${cond}`;
  }
  return out;
}

/** SQL of a property's numeric value (non-numeric or missing → 0, as PostHog's toFloat). */
export function numericProperty(h: Handle, key: string) {
  return h`(CASE WHEN (e.properties->>${key}) ~ '^\\s*-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?\\s*$' THEN (e.properties->>${key})::float8 ELSE 0 END)`;
}

