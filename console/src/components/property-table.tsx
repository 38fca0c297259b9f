/** A properties object as a two-column table, keys sorted (PostHog's `$` properties last). */

/** The table; `label` names it for screen readers. */
export function PropertyTable({ properties, label }: { properties: Record<string, unknown>; label: string }) {
  const keys = Object.keys(properties).sort((a, b) => (a.startsWith('$') === b.startsWith('$') ? a.localeCompare(b) : a.startsWith('$') ? 1 : -1));
  if (keys.length === 0) return <p class="hint">No properties.</p>;
  return (
    <table class="props" aria-label={label}>
      <tbody>
        {keys.map((k) => {
          const v = properties[k];
          return <tr key={k}><th scope="row">{k}</th><td><code>{typeof v === 'string' ? v : JSON.stringify(v)}</code></td></tr>;
        })}
      </tbody>
    </table>
  );
}
