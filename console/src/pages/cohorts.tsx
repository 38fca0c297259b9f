/** Cohorts: the list with member counts (page by page), and a new dynamic cohort on one person property. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { usePaged } from '../components/paged.js';
import { MoreRows } from '../components/more-rows.js';
import { OPERATORS } from '../components/condition-sets.js';

interface Cohort { id: number; name: string; is_static: boolean; count: number | null; is_calculating: boolean }

/** The cohorts page. */
export function CohortList() {
  const list = usePaged<Cohort>('/p/cohorts/?limit=100', []);
  const [name, setName] = useState('');
  const [key, setKey] = useState('');
  const [operator, setOperator] = useState('exact');
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      await api('POST', '/p/cohorts/', { name, filters: { properties: { type: 'AND', values: [{ type: 'AND', values: [{ key, type: 'person', operator, value: ['exact', 'is_not'].includes(operator) ? value.split(',').map((s) => s.trim()) : value }] }] } } });
      setName(''); setKey(''); setValue('');
      list.reload();
    } catch (err) { setError((err as Error).message); }
  };
  return (
    <section>
      <h1>Cohorts</h1>
      {list.error && <p role="alert" class="error">{list.error}</p>}
      <table class="list">
        <thead><tr><th scope="col">Id</th><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Persons</th></tr></thead>
        <tbody>{list.rows.map((c) => <tr><td>{c.id}</td><td>{c.name}</td><td>{c.is_static ? 'static' : 'dynamic'}</td><td>{c.is_calculating ? 'calculating…' : c.count ?? '–'}</td></tr>)}</tbody>
      </table>
      <MoreRows list={list} noun="cohorts" />
      <h2>New cohort</h2>
      <form onSubmit={create} class="row">
        <label>Name <input value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} required /></label>
        <label>Person property <input value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required /></label>
        <label>Operator <select value={operator} onChange={(e) => setOperator((e.target as HTMLSelectElement).value)}>{OPERATORS.map((o) => <option value={o}>{o}</option>)}</select></label>
        <label>Value <input value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} /></label>
        <button type="submit">Create cohort</button>
        {error && <span role="alert" class="error">{error}</span>}
      </form>
    </section>
  );
}
