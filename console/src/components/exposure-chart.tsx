/**
 * "Exposed users per day": an `ExperimentExposureQuery` answer (each user counted once, on the day
 * of their first exposure; cumulative counts per day and variant) drawn as a small inline-SVG
 * chart of the users newly exposed each day, one line per variant, with dates on the x axis, the
 * totals beside it and a table as the text alternative.
 */
export interface ExposureSeries { variant: string; days: string[]; exposure_counts: number[] }

const COLORS = ['#1d4aff', '#f04f58', '#2dbd7a', '#ff9f1c', '#8e44ad', '#0fa3b1'];

/** Users newly exposed per day from cumulative counts. */
export function daily(cumulative: number[]): number[] {
  return cumulative.map((c, i) => c - (i === 0 ? 0 : cumulative[i - 1]!));
}

function shortDate(d: string): string {
  return new Date(`${d}T00:00:00Z`).toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

/** The chart and its totals; `series` as the query answers it. */
export function ExposureChart({ series, totals }: { series: ExposureSeries[]; totals: Record<string, number> }) {
  const days = series[0]?.days ?? [];
  if (days.length === 0) return <p class="hint">No exposures yet.</p>;
  const lines = series.map((s) => ({ key: s.variant, data: daily(s.exposure_counts) }));
  const max = Math.max(1, ...lines.flatMap((l) => l.data));
  const W = 560; const H = 180; const left = 36; const right = 12; const top = 10; const bottom = 26;
  const x = (i: number) => left + (days.length === 1 ? (W - left - right) / 2 : (i / (days.length - 1)) * (W - left - right));
  const y = (v: number) => top + (1 - v / max) * (H - top - bottom);
  const ticks = days.length <= 7 ? days.map((_, i) => i) : [0, Math.floor((days.length - 1) / 2), days.length - 1];
  return (
    <figure class="exposure-chart">
      <svg viewBox={`0 0 ${W} ${H}`} width="100%" style={{ maxWidth: `${W}px` }} role="img"
        aria-label={`Exposed users per day from ${days[0]} to ${days[days.length - 1]}: ${lines.map((l) => `${l.key} ${totals[l.key] ?? 0} in total`).join(', ')}`}>
        <line x1={left} x2={W - right} y1={y(0)} y2={y(0)} stroke="#ccc" />
        <text x={left - 6} y={y(max) + 4} text-anchor="end" font-size="11" fill="#555">{max}</text>
        <text x={left - 6} y={y(0) + 4} text-anchor="end" font-size="11" fill="#555">0</text>
        {ticks.map((i) => <text class="day" x={x(i)} y={H - 6} text-anchor="middle" font-size="11" fill="#555">{shortDate(days[i]!)}</text>)}
        {lines.map((l, k) => (
          <g data-variant={l.key}>
            {l.data.length > 1 && <polyline fill="none" stroke={COLORS[k % COLORS.length]} stroke-width="2" points={l.data.map((v, i) => `${x(i)},${y(v)}`).join(' ')} />}
            {l.data.map((v, i) => <circle cx={x(i)} cy={y(v)} r="2.5" fill={COLORS[k % COLORS.length]}><title>{`${l.key}, ${days[i]}: ${v}`}</title></circle>)}
          </g>
        ))}
      </svg>
      <figcaption>
        {lines.map((l, k) => <span class="legend"><span class="swatch" style={{ background: COLORS[k % COLORS.length] }} />{l.key}: <strong>{totals[l.key] ?? 0}</strong> users</span>)}
      </figcaption>
      <table class="sr-only"><caption>Exposed users per day</caption>
        <thead><tr><th scope="col">Day</th>{lines.map((l) => <th scope="col">{l.key}</th>)}</tr></thead>
        <tbody>{days.map((d, i) => <tr><th scope="row">{d}</th>{lines.map((l) => <td>{l.data[i]}</td>)}</tr>)}</tbody>
      </table>
    </figure>
  );
}
