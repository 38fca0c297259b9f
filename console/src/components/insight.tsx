/**
 * One insight's result, drawn: a TrendsQuery time series as a uPlot line chart (one line per
 * series or breakdown value), an aggregated display (ActionsTable, BoldNumber, …) as a table.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

interface Series { label: string; breakdown_value?: string; data: number[]; days: string[]; count: number; aggregated_value?: number }

const COLORS = ['#1d4aff', '#f04f58', '#2dbd7a', '#ff9f1c', '#8e44ad', '#0fa3b1'];

/** A uPlot line chart of `series` over `days` (`YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS`, UTC), with a text alternative. */
export function LineChart({ days, series, title }: { days: string[]; series: { label: string; data: number[] }[]; title: string }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!ref.current || days.length === 0) return;
    const x = days.map((d) => Date.parse(d.length === 10 ? `${d}T00:00:00Z` : `${d.replace(' ', 'T')}Z`) / 1000);
    const plot = new uPlot({
      width: Math.min(ref.current.clientWidth || 560, 720), height: 220, title,
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2 }))],
      axes: [{}, { size: 50 }],
    }, [x, ...series.map((s) => s.data)], ref.current);
    return () => plot.destroy();
  }, [days, series, title]);
  return <div ref={ref} class="chart" role="img" aria-label={`${title}: ${series.map((s) => `${s.label} ${s.data.reduce((a, b) => a + b, 0)}`).join(', ')}`} />;
}

/** An insight's result: a line chart for a time series, a table for an aggregated display or a single day. */
export function Insight({ name, result }: { name: string; query?: unknown; result: Series[] | null }) {
  if (!Array.isArray(result)) return <div class="tile"><h3>{name}</h3><p class="hint">No result.</p></div>;
  // A single day draws no line: it is shown as a table like an aggregated display.
  const aggregated = result.some((r) => r.aggregated_value !== undefined) || (result[0]?.days.length ?? 0) < 2;
  return (
    <div class="tile">
      {aggregated ? (
        <>
          <h3>{name}</h3>
          <table class="list"><thead><tr><th scope="col">Series</th><th scope="col">Value</th></tr></thead>
            <tbody>{result.map((r) => <tr><td>{r.breakdown_value ?? r.label}</td><td>{r.aggregated_value ?? r.count}</td></tr>)}</tbody></table>
        </>
      ) : (
        <LineChart title={name} days={result[0]?.days ?? []} series={result.map((r) => ({ label: r.breakdown_value ?? r.label, data: r.data }))} />
      )}
    </div>
  );
}
