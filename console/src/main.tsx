/**
 * The Switchyard console: a single page served by the control plane at `/`. Sign in
 * with a personal API key; then flags, experiments (with their results), cohorts, event
 * definitions and personal API keys, each through the management API with the key's scopes.
 * Routing is by URL hash (`#/flags`, `#/flags/12`, `#/experiments/3`, …) so the server serves one
 * document.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './app.css';
import { signOut, storedKey } from './api.js';
import { SignIn } from './pages/signin.js';
import { FlagList } from './pages/flag-list.js';
import { FlagEdit } from './pages/flag-edit.js';
import { ExperimentList } from './pages/experiment-list.js';
import { ExperimentNew } from './pages/experiment-new.js';
import { ExperimentView } from './pages/experiment-view.js';
import { CohortList } from './pages/cohorts.js';
import { EventDefinitions } from './pages/event-definitions.js';
import { Keys } from './pages/keys.js';
import { EventsExplorer } from './pages/events-explorer.js';
import { PersonList } from './pages/person-list.js';
import { PersonView } from './pages/person-view.js';
import { Holdouts } from './pages/holdouts.js';
import { SavedMetrics } from './pages/saved-metrics.js';

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#/flags');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/flags');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

const NAV: [string, string][] = [['#/flags', 'Feature flags'], ['#/experiments', 'Experiments'], ['#/cohorts', 'Cohorts'], ['#/explore', 'Events'], ['#/persons', 'Persons'], ['#/events', 'Event definitions'], ['#/keys', 'API keys']];

function page(hash: string) {
  const parts = hash.replace(/^#\//, '').split('/');
  switch (parts[0]) {
    case 'flags': return parts[1] ? <FlagEdit id={parts[1] === 'new' ? null : Number(parts[1])} /> : <FlagList />;
    case 'experiments':
      if (parts[1] === 'new') return <ExperimentNew />;
      return parts[1] ? <ExperimentView id={Number(parts[1])} /> : <ExperimentList />;
    case 'cohorts': return <CohortList />;
    case 'events': return <EventDefinitions />;
    case 'keys': return <Keys />;
    case 'explore': return <EventsExplorer key={hash} route={parts.slice(1)} />;
    case 'persons': return parts[1] ? <PersonView route={parts.slice(1)} /> : <PersonList />;
    case 'holdouts': return <Holdouts />;
    case 'saved-metrics': return <SavedMetrics />;
    default: return <FlagList />;
  }
}

function App() {
  const hash = useHash();
  const [signedIn, setSignedIn] = useState(storedKey() !== null);
  if (!signedIn) return <SignIn onDone={() => setSignedIn(true)} />;
  return (
    <div class="shell">
      <header>
        <a class="brand" href="#/flags">Switchyard</a>
        <nav aria-label="Sections">
          {NAV.map(([href, label]) => <a href={href} aria-current={hash.startsWith(href) ? 'page' : undefined}>{label}</a>)}
        </nav>
        <button class="link" onClick={() => { signOut(); setSignedIn(false); }}>Sign out</button>
      </header>
      <main>{page(hash)}</main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
