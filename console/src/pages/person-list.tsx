/**
 * Persons (PostHog's People): newest first through `GET /persons/`, searched by email or name
 * (containing the text) or an exact distinct id or uuid, paged with the API's `next` / `previous`
 * links; each links to its person page.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useLoad } from '../components/use-load.js';
import { pathOf, personName, utc } from '../components/explore-format.js';
import '../explore.css';

/** A person as the API returns it. */
export interface Person { id: number; uuid: string; name: string; distinct_ids: string[]; properties: Record<string, unknown>; created_at: string }
interface Page { results: Person[]; next: string | null; previous: string | null }

const LIMIT = 50;

/** The persons page. */
export function PersonList() {
  const [search, setSearch] = useState('');
  const [url, setUrl] = useState(`/p/persons/?limit=${LIMIT}`);
  const page = useLoad(() => api<Page>('GET', url), [url]);
  const submit = (e: Event) => {
    e.preventDefault();
    const q = new URLSearchParams({ limit: String(LIMIT), ...(search.trim() ? { search: search.trim() } : {}) });
    setUrl(`/p/persons/?${q}`);
  };
  const d = page.data;
  return (
    <section>
      <h1>Persons</h1>
      <form class="filters" onSubmit={submit} role="search">
        <label class="grow">Search <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} placeholder="email, name, distinct id or uuid" /></label>
        <div class="row"><button type="submit">Search</button></div>
      </form>
      {page.error && <p role="alert" class="error">{page.error}</p>}
      {d && (
        <table class="list persons">
          <caption class="sr-only">Persons, newest first</caption>
          <thead><tr><th scope="col">Person</th><th scope="col">Distinct ids</th><th scope="col">Created (UTC)</th></tr></thead>
          <tbody>
            {d.results.map((p) => (
              <tr key={p.uuid}>
                <td class="wrap"><a href={`#/persons/${p.uuid}`}>{personName(p)}</a></td>
                <td class="wrap">{p.distinct_ids.slice(0, 3).join(', ')}{p.distinct_ids.length > 3 ? ` and ${p.distinct_ids.length - 3} more` : ''}</td>
                <td>{utc(p.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {d && d.results.length === 0 && <p>No persons match.</p>}
      {d && (d.previous || d.next) && (
        <div class="row">
          <button type="button" class="chip" disabled={!d.previous} onClick={() => d.previous && setUrl(pathOf(d.previous))}>Previous</button>
          <button type="button" class="chip" disabled={!d.next} onClick={() => d.next && setUrl(pathOf(d.next))}>Next</button>
        </div>
      )}
    </section>
  );
}
