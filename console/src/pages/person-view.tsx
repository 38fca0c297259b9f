/**
 * One person: name, created_at, uuid, distinct ids and properties (`GET /persons/:id/`, or the
 * person holding a distinct id through `GET /persons/?distinct_id=`), a link to its events, and
 * every flag's value with its reason for one of its distinct ids
 * (`GET /feature_flags/evaluation_reasons/`, the evaluation core the nodes run, over the stored
 * person), and the cohorts it belongs to (`GET /persons/cohorts/?person_id=`: static cohorts
 * from their members, dynamic ones matched now against the stored person), each linking to
 * `#/cohorts/<id>`. `route` is `[id or uuid]` or `['d', distinct id]` from `#/persons/…`.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure } from '../api.js';
import { useLoad } from '../components/use-load.js';
import { personName, utc } from '../components/explore-format.js';
import { PropertyTable } from '../components/property-table.js';
import type { Person } from './person-list.js';
import '../explore.css';

interface Reason { value: boolean | string; evaluation: { reason: string; condition_index: number | null } }

/** PostHog's descriptions of the match reasons (`condition_index` is 0-based). */
function describe(r: Reason['evaluation']): string {
  const set = r.condition_index === null ? '' : ` ${r.condition_index + 1}`;
  switch (r.reason) {
    case 'condition_match': return `Matched condition set${set}`;
    case 'out_of_rollout_bound': return `Out of rollout bound (condition set${set})`;
    case 'no_condition_match': return 'No matching condition set';
    case 'no_group_type': return 'No group type';
    case 'super_condition_value': return 'Super condition value (early access enrollment)';
    case 'holdout_condition_value': return 'In the holdout group';
    case 'disabled': case 'flag_disabled': return 'Feature flag is disabled';
    case 'missing_dependency': return 'Missing dependency';
    default: return r.reason;
  }
}

async function loadPerson(route: string[]): Promise<Person> {
  if (route[0] === 'd') {
    const did = decodeURIComponent(route[1] ?? '');
    const r = await api<{ results: Person[] }>('GET', `/p/persons/?${new URLSearchParams({ distinct_id: did, limit: '1' })}`);
    if (!r.results[0]) throw new ApiFailure(404, `No person has the distinct id ${did}.`, null);
    return r.results[0];
  }
  return api<Person>('GET', `/p/persons/${encodeURIComponent(decodeURIComponent(route[0] ?? ''))}/`);
}

/** The person page. */
export function PersonView({ route }: { route: string[] }) {
  const person = useLoad(() => loadPerson(route), [route.join('/')]);
  const p = person.data;
  return (
    <section>
      <div class="bar">
        <h1>{p ? personName(p) : 'Person'}</h1>
        {p && <a class="button" href={`#/explore/person_id/${p.uuid}`}>Events of this person</a>}
      </div>
      {person.error && <p role="alert" class="error">{person.error}</p>}
      {p && (
        <>
          <dl class="facts">
            <dt>Created</dt><dd>{utc(p.created_at)}</dd>
            <dt>UUID</dt><dd>{p.uuid}</dd>
            <dt>Distinct ids</dt><dd><ul class="plain" aria-label="Distinct ids">{p.distinct_ids.map((d) => <li key={d}>{d}</li>)}</ul></dd>
          </dl>
          <h2>Properties</h2>
          <PropertyTable properties={p.properties} label="Person properties" />
          <PersonCohorts person={p} />
          <PersonFlags person={p} />
        </>
      )}
    </section>
  );
}

interface CohortRef { id: number; name: string; is_static: boolean }

/** The cohorts the person is in, by id. */
function PersonCohorts({ person }: { person: Person }) {
  const cohorts = useLoad(() => api<{ results: CohortRef[] }>('GET', `/p/persons/cohorts/?${new URLSearchParams({ person_id: person.uuid })}`), [person.uuid]);
  const list = cohorts.data?.results;
  return (
    <>
      <h2>Cohorts</h2>
      {cohorts.error && <p role="alert" class="error">{cohorts.error}</p>}
      {list && list.length > 0 && (
        <ul class="plain" aria-label="Cohorts">
          {list.map((c) => (
            <li key={c.id} data-cohort={c.id}>
              <a href={`#/cohorts/${c.id}`}>{c.name || `Cohort ${c.id}`}</a> <span class="hint">({c.is_static ? 'static' : 'dynamic'})</span>
            </li>
          ))}
        </ul>
      )}
      {list && list.length === 0 && <p>This person is in no cohort.</p>}
    </>
  );
}

function PersonFlags({ person }: { person: Person }) {
  const [did, setDid] = useState(person.distinct_ids[0] ?? '');
  useEffect(() => setDid(person.distinct_ids[0] ?? ''), [person.uuid]);
  const reasons = useLoad(() => (did === '' ? Promise.resolve({} as Record<string, Reason>) : api<Record<string, Reason>>('GET', `/p/feature_flags/evaluation_reasons/?${new URLSearchParams({ distinct_id: did })}`)), [did]);
  const ids = useLoad(() => api<{ results: { id: number; key: string }[] }>('GET', '/p/feature_flags/?limit=1000'), []);
  const idOf = new Map(ids.data?.results.map((f) => [f.key, f.id]) ?? []);
  const keys = Object.keys(reasons.data ?? {}).sort();
  return (
    <>
      <h2>Feature flags</h2>
      <p class="hint">Each flag's value and why, as evaluation nodes answer this person now (stored person properties; no request overrides).</p>
      {person.distinct_ids.length > 1 && (
        <label>Evaluate for distinct id <select value={did} onChange={(e) => setDid((e.target as HTMLSelectElement).value)}>
          {person.distinct_ids.map((d) => <option value={d}>{d}</option>)}
        </select></label>
      )}
      {reasons.error && <p role="alert" class="error">{reasons.error}</p>}
      {reasons.data && (
        <table class="list flag-values">
          <caption class="sr-only">Flag values for {did}</caption>
          <thead><tr><th scope="col">Flag</th><th scope="col">Value</th><th scope="col">Reason</th></tr></thead>
          <tbody>
            {keys.map((k) => {
              const r = reasons.data![k]!;
              const id = idOf.get(k);
              return (
                <tr key={k} data-flag={k}>
                  <td>{id === undefined ? k : <a href={`#/flags/${id}`}>{k}</a>}</td>
                  <td class={`value-${r.value === false ? 'false' : 'true'}`}>{String(r.value)}</td>
                  <td data-reason={r.evaluation.reason}>{describe(r.evaluation)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {reasons.data && keys.length === 0 && <p>This project has no flags.</p>}
    </>
  );
}
