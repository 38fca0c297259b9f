/**
 * The bounded subset of HogQL a metric source's `math_hogql` may use (`math: "hogql"`), as
 * PostHog's ExperimentQueryRunner tests use it (`sum(toFloat(properties.revenue) -
 * toFloat(properties.cost))`, `avg(properties.amount)`, `properties.price`):
 *
 *   expression := [aggregate "("] value [")"]      aggregate: sum | avg | min | max | count
 *   value      := term (("+" | "-") term)*
 *   term       := factor (("*" | "/") factor)*
 *   factor     := number | "-" factor | "(" value ")" | toFloat "(" value ")" | property
 *   property   := properties.<name> | properties.`<name>`
 *
 * PostHog's rules (hogql_aggregation_utils): the aggregate is applied per entity over the
 * source's events; without one, the values are summed; `count()` counts the events and
 * `count(value)` the events whose value is not null. A property is a number when its value reads
 * as one, else null (HogQL's toFloat: toFloat64OrNull); null values are left out of the
 * aggregate, and an entity with no value counts as 0. Division by zero gives null (Postgres would
 * raise where ClickHouse gives inf).
 *
 * Anything else (other functions, person or session fields, comparisons, strings) is refused
 * with a validation error naming what is supported: no HogQL is ever passed to the database.
 */
import type { Tx } from '../../db/connect.js';
import { errors } from '../../../errors.js';

/** Aggregates the subset allows. */
export const HOGQL_AGGREGATES = ['sum', 'avg', 'min', 'max', 'count'] as const;
type Aggregate = (typeof HOGQL_AGGREGATES)[number];

/** One node of a parsed value. */
export type HogqlValue =
  | { k: 'num'; v: number }
  | { k: 'prop'; name: string }
  | { k: 'neg'; a: HogqlValue }
  | { k: 'op'; op: '+' | '-' | '*' | '/'; a: HogqlValue; b: HogqlValue };

/** A parsed `math_hogql`: the per-entity aggregate and the per-event value (null: `count()`). */
export interface HogqlMath { aggregate: Aggregate; value: HogqlValue | null }

/** The message of every refusal: what the subset is. */
export const HOGQL_SUPPORTED = 'math_hogql supports sum(…), avg(…), min(…), max(…), count() or count(…) around arithmetic (+ - * /, parentheses, numbers) '
  + 'of event properties (properties.<name>, toFloat(properties.<name>)); without an aggregate the values are summed';

const TOKEN = /\s*(?:(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|([A-Za-z_$][A-Za-z0-9_$]*)|(`[^`]+`)|([-+*/().]))/y;

type Token = { num?: number; id?: string; quoted?: string; sym?: string };

function tokenize(text: string, attr: string): Token[] {
  const out: Token[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(text);
    if (!m) throw errors.validation(`Cannot read math_hogql at "${text.slice(at, at + 20).trim()}": ${HOGQL_SUPPORTED}.`, attr);
    at = TOKEN.lastIndex;
    if (m[1] !== undefined) out.push({ num: Number(m[1]) });
    else if (m[2] !== undefined) out.push({ id: m[2] });
    else if (m[3] !== undefined) out.push({ quoted: m[3].slice(1, -1) });
    else out.push({ sym: m[4] });
  }
  return out;
}

/**
 * Parses `text` into a {@link HogqlMath}. @throws ApiError 400 (attr `attr`) naming the
 * supported subset when `text` is outside it.
 */
export function parseHogqlMath(text: unknown, attr: string): HogqlMath {
  if (typeof text !== 'string' || text.trim() === '') throw errors.validation(`math "hogql" needs a math_hogql expression: ${HOGQL_SUPPORTED}.`, attr);
  const tokens = tokenize(text, attr);
  let i = 0;
  const refuse = (what: string): never => { throw errors.validation(`${what} in math_hogql ${JSON.stringify(text)}: ${HOGQL_SUPPORTED}.`, attr); };
  const peek = () => tokens[i];
  const sym = (s: string) => peek()?.sym === s;
  const expect = (s: string) => { if (!sym(s)) refuse(`Expected "${s}"`); i++; };
  const value = (): HogqlValue => {
    let a = term();
    while (sym('+') || sym('-')) { const op = peek()!.sym as '+' | '-'; i++; a = { k: 'op', op, a, b: term() }; }
    return a;
  };
  const term = (): HogqlValue => {
    let a = factor();
    while (sym('*') || sym('/')) { const op = peek()!.sym as '*' | '/'; i++; a = { k: 'op', op, a, b: factor() }; }
    return a;
  };
  const factor = (): HogqlValue => {
    const t = peek();
    if (!t) return refuse('Unexpected end');
    if (t.num !== undefined) { i++; return { k: 'num', v: t.num }; }
    if (t.sym === '-') { i++; return { k: 'neg', a: factor() }; }
    if (t.sym === '(') { i++; const v = value(); expect(')'); return v; }
    if (t.id === 'toFloat') { i++; expect('('); const v = value(); expect(')'); return v; }
    if (t.id === 'properties') {
      i++; expect('.');
      const n = peek();
      const name = n?.id ?? n?.quoted;
      if (name === undefined) return refuse('Expected a property name after "properties."');
      i++;
      return { k: 'prop', name };
    }
    return refuse(`"${t.id ?? t.sym ?? t.quoted}" is not supported`);
  };
  let result: HogqlMath;
  const head = peek();
  if (head?.id !== undefined && (HOGQL_AGGREGATES as readonly string[]).includes(head.id) && tokens[i + 1]?.sym === '(') {
    const aggregate = head.id as Aggregate;
    i += 2;
    if (aggregate === 'count' && sym(')')) { i++; result = { aggregate, value: null }; }
    else { const v = value(); expect(')'); result = { aggregate, value: v }; }
  } else {
    result = { aggregate: 'sum', value: value() };
  }
  if (i < tokens.length) refuse('Unexpected text after the expression');
  return result;
}

/** SQL of a per-event value over the event alias `e` (float8, null when a property is not a number). */
export function hogqlValueSql(tx: Tx, v: HogqlValue | null): ReturnType<Tx> {
  if (v === null) return tx`1::float8`;
  switch (v.k) {
    case 'num': return tx`${v.v}::float8`;
    case 'prop': return tx`(CASE WHEN (e.properties->>${v.name}) ~ '^\\s*-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?\\s*$' THEN (e.properties->>${v.name})::float8 END)`;
    case 'neg': return tx`(-${hogqlValueSql(tx, v.a)})`;
    default: {
      const a = hogqlValueSql(tx, v.a);
      const b = hogqlValueSql(tx, v.b);
      switch (v.op) {
        case '+': return tx`(${a} + ${b})`;
        case '-': return tx`(${a} - ${b})`;
        case '*': return tx`(${a} * ${b})`;
        default: return tx`(${a} / NULLIF(${b}, 0))`;
      }
    }
  }
}

/** SQL of the per-entity aggregate over the per-event values `s.num` (see the module doc). */
export function hogqlAggregateSql(tx: Tx, m: HogqlMath): ReturnType<Tx> {
  switch (m.aggregate) {
    case 'sum': return tx`sum(s.num)`;
    case 'avg': return tx`avg(s.num)`;
    case 'min': return tx`min(s.num)`;
    case 'max': return tx`max(s.num)`;
    default: return m.value === null ? tx`count(*)::float8` : tx`count(s.num)::float8`;
  }
}
