/**
 * The release-condition editor of a flag: condition sets (PostHog's `filters.groups`), each with
 * person-property or cohort filters and a rollout percentage; variants with their rollout; and
 * payloads (JSON text per variant, or for `true`).
 */
import type { JSX } from 'preact';

/** One filter row of a condition set as the form edits it (`value` is text; lists are comma-separated). */
export interface Property { key: string; operator: string; value: string; type: 'person' | 'cohort' }
/** One condition set (`filters.groups[i]`): its filters and rollout percentage (0–100). */
export interface ConditionSet { properties: Property[]; rollout_percentage: number }
/** One variant of a multivariate flag: key and rollout percentage (0–100). */
export interface Variant { key: string; rollout_percentage: number }

/** Person-property operators the editor offers (a subset of PostHog's). */
export const OPERATORS = ['exact', 'is_not', 'icontains', 'not_icontains', 'regex', 'not_regex', 'gt', 'gte', 'lt', 'lte', 'is_set', 'is_not_set'];

function field<T>(list: T[], i: number, patch: Partial<T>): T[] {
  return list.map((x, k) => (k === i ? { ...x, ...patch } : x));
}

const num = (e: JSX.TargetedEvent<HTMLInputElement>) => Number(e.currentTarget.value);
const str = (e: JSX.TargetedEvent<HTMLInputElement | HTMLSelectElement>) => e.currentTarget.value;

/** Editor of the condition sets; calls `onChange` with the whole new list on every edit. */
export function ConditionSets({ groups, onChange }: { groups: ConditionSet[]; onChange(g: ConditionSet[]): void }) {
  return (
    <fieldset>
      <legend>Release conditions</legend>
      {groups.map((g, gi) => (
        <div class="group" key={gi}>
          <h3>Condition set {gi + 1}</h3>
          {g.properties.map((p, pi) => (
            <div class="row" key={pi}>
              <label>Type <select value={p.type} onChange={(e) => onChange(field(groups, gi, { properties: field(g.properties, pi, { type: str(e) as Property['type'] }) }))}>
                <option value="person">person property</option><option value="cohort">cohort</option>
              </select></label>
              {p.type === 'person' && <label>Property <input value={p.key} onInput={(e) => onChange(field(groups, gi, { properties: field(g.properties, pi, { key: str(e) }) }))} required /></label>}
              {p.type === 'person' && <label>Operator <select value={p.operator} onChange={(e) => onChange(field(groups, gi, { properties: field(g.properties, pi, { operator: str(e) }) }))}>
                {OPERATORS.map((o) => <option value={o}>{o}</option>)}
              </select></label>}
              <label>{p.type === 'cohort' ? 'Cohort id' : 'Value'} <input value={p.value} onInput={(e) => onChange(field(groups, gi, { properties: field(g.properties, pi, { value: str(e) }) }))} /></label>
              <button type="button" class="link" onClick={() => onChange(field(groups, gi, { properties: g.properties.filter((_, k) => k !== pi) }))}>Remove</button>
            </div>
          ))}
          <div class="row">
            <button type="button" class="link" onClick={() => onChange(field(groups, gi, { properties: [...g.properties, { key: '', operator: 'exact', value: '', type: 'person' }] }))}>Add a filter</button>
            <label>Roll out to <input type="number" min="0" max="100" value={g.rollout_percentage} onInput={(e) => onChange(field(groups, gi, { rollout_percentage: num(e) }))} /> %</label>
            {groups.length > 1 && <button type="button" class="link" onClick={() => onChange(groups.filter((_, k) => k !== gi))}>Remove set</button>}
          </div>
        </div>
      ))}
      <button type="button" class="link" onClick={() => onChange([...groups, { properties: [], rollout_percentage: 100 }])}>Add a condition set</button>
    </fieldset>
  );
}

/** Editor of the variants and of each one's JSON payload (`true` for a boolean flag). */
export function Variants({ variants, payloads, onChange, onPayloads }: { variants: Variant[]; payloads: Record<string, string>; onChange(v: Variant[]): void; onPayloads(p: Record<string, string>): void }) {
  const keys = variants.length > 0 ? variants.map((v) => v.key) : ['true'];
  return (
    <fieldset>
      <legend>Variants and payloads</legend>
      {variants.map((v, i) => (
        <div class="row" key={i}>
          <label>Variant key <input value={v.key} onInput={(e) => onChange(field(variants, i, { key: str(e) }))} required /></label>
          <label>Rollout <input type="number" min="0" max="100" value={v.rollout_percentage} onInput={(e) => onChange(field(variants, i, { rollout_percentage: num(e) }))} /> %</label>
          <button type="button" class="link" onClick={() => onChange(variants.filter((_, k) => k !== i))}>Remove</button>
        </div>
      ))}
      <button type="button" class="link" onClick={() => onChange([...variants, { key: variants.length === 0 ? 'control' : `test${variants.length > 1 ? `-${variants.length}` : ''}`, rollout_percentage: 0 }])}>Add a variant</button>
      {keys.map((k) => (
        <label class="block" key={k}>Payload for {k === 'true' ? 'the enabled flag' : k} (JSON)
          <textarea rows={2} value={payloads[k] ?? ''} onInput={(e) => onPayloads({ ...payloads, [k]: (e.target as HTMLTextAreaElement).value })} />
        </label>
      ))}
    </fieldset>
  );
}
