/**
 * A record's activity log, readable: a creation reads "created" with only the fields that say
 * something (not every field as `null → value`), a flag's `filters` read as condition sets
 * (filters and rollout %), variants with their split and payloads, and a change shows the lines
 * removed and added; other fields read `before → after` in plain words.
 */

/** One entry of PostHog's activity log. */
export interface ActivityEntry { activity: string; created_at: string; user: { first_name: string; email: string | null } | null; detail: { changes: { action?: string; field: string; before: unknown; after: unknown }[] | null } }

interface Prop { key?: string; type?: string; operator?: string; value?: unknown }
interface Filters { groups?: { properties?: Prop[]; rollout_percentage?: number | null; variant?: string | null }[]; multivariate?: { variants?: { key: string; rollout_percentage: number }[] } | null; payloads?: Record<string, unknown> | null; aggregation_group_type_index?: number | null }

function value(v: unknown): string {
  if (Array.isArray(v)) return v.map(value).join(', ');
  if (v === null || v === undefined) return '–';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function property(p: Prop): string {
  if (p.type === 'cohort') return `in cohort ${value(p.value)}`;
  if (p.operator === 'is_set' || p.operator === 'is_not_set') return `${p.key} ${p.operator === 'is_set' ? 'is set' : 'is not set'}`;
  return `${p.type && p.type !== 'person' ? `${p.type} ` : ''}${p.key} ${p.operator ?? 'exact'} ${value(p.value)}`;
}

/** A flag's filters as readable lines: one per condition set, variant and payload. */
export function filterLines(f: unknown): string[] {
  if (f === null || typeof f !== 'object') return [];
  const x = f as Filters;
  const lines = (x.groups ?? []).map((g, i) => `Condition set ${i + 1}: ${(g.properties ?? []).length === 0 ? 'everyone' : (g.properties ?? []).map(property).join(' and ')} — ${g.rollout_percentage ?? 100} %${g.variant ? ` → ${g.variant}` : ''}`);
  for (const v of x.multivariate?.variants ?? []) lines.push(`Variant ${v.key}: ${v.rollout_percentage} %`);
  for (const [k, p] of Object.entries(x.payloads ?? {})) lines.push(`Payload ${k === 'true' ? 'when enabled' : `of ${k}`}: ${typeof p === 'string' ? p : JSON.stringify(p)}`);
  return lines;
}

/** Values a creation leaves at their defaults, not worth a line. */
const DEFAULTS: Record<string, unknown> = { creation_context: 'feature_flags', evaluation_runtime: 'all', bucketing_identifier: 'distinct_id' };

const empty = (v: unknown) => v === null || v === undefined || v === false || v === '' || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && Object.keys(v).length === 0);

function Lines({ before, after }: { before: string[]; after: string[] }) {
  const gone = before.filter((l) => !after.includes(l));
  const added = after.filter((l) => !before.includes(l));
  const kept = after.filter((l) => before.includes(l));
  return (
    <ul class="filter-diff">
      {gone.map((l) => <li class="removed"><span aria-label="removed">−</span> {l}</li>)}
      {added.map((l) => <li class="added"><span aria-label="added">+</span> {l}</li>)}
      {kept.map((l) => <li class="kept">{l}</li>)}
    </ul>
  );
}

/** The entries, newest first as the API answers them. */
export function ActivityList({ entries }: { entries: ActivityEntry[] }) {
  return (
    <ol class="activity">
      {entries.map((a) => {
        const changes = a.detail.changes ?? [];
        const created = a.activity === 'created' || (changes.length > 0 && changes.every((c) => c.action === 'created'));
        const shown = created ? changes.filter((c) => !empty(c.after) && DEFAULTS[c.field] !== c.after) : changes;
        return (
          <li data-activity={created ? 'created' : a.activity}>
            <strong>{a.user?.first_name || a.user?.email || 'system'}</strong> {created ? 'created' : a.activity} <time>{new Date(a.created_at).toLocaleString()}</time>
            {shown.length > 0 && (
              <table class="diff"><tbody>
                {shown.map((c) => (
                  <tr data-field={c.field}><th scope="row">{c.field.replace(/_/g, ' ')}</th>
                    {c.field === 'filters' || c.field === 'holdout_groups' ? <td colSpan={2}>{created ? <ul class="filter-diff">{filterLines(c.after).map((l) => <li>{l}</li>)}</ul> : <Lines before={filterLines(c.before)} after={filterLines(c.after)} />}</td>
                      : created ? <td colSpan={2}><code>{value(c.after)}</code></td>
                        : <><td class="before"><code>{value(c.before)}</code></td><td class="after">→ <code>{value(c.after)}</code></td></>}
                  </tr>
                ))}
              </tbody></table>
            )}
          </li>
        );
      })}
    </ol>
  );
}
