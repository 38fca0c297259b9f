/**
 * Experiment results as people read them: per variant, its interval of the effect against the
 * baseline (credible interval for Bayesian, confidence interval for frequentist; relative, in %)
 * as a bar around 0, coloured by direction when significant. Plain SVG (no charting library
 * needed for intervals).
 */
export interface VariantResult { key: string; interval: [number, number] | null; significant: boolean; label: string }

/** The chart: one row per variant, the baseline first (no interval), intervals as fractions (0.1 = +10 %). */
export function IntervalChart({ rows, caption }: { rows: VariantResult[]; caption: string }) {
  const bounds = rows.flatMap((r) => r.interval ?? []);
  const span = Math.max(0.05, ...bounds.map((b) => Math.abs(b))) * 1.15;
  const W = 560; const left = 110; const right = 20; const rowH = 44;
  const x = (v: number) => left + ((v + span) / (2 * span)) * (W - left - right);
  const H = rows.length * rowH + 30;
  return (
    <figure class="interval-chart">
      <svg viewBox={`0 0 ${W} ${H}`} width="100%" style={{ maxWidth: `${W}px` }} role="img" aria-label={caption}>
        <line x1={x(0)} x2={x(0)} y1={0} y2={H - 20} stroke="#888" stroke-dasharray="4 3" />
        {[-span, -span / 2, 0, span / 2, span].map((t) => (
          <text x={x(t)} y={H - 4} text-anchor="middle" font-size="11" fill="#555">{`${(t * 100).toFixed(0)}%`}</text>
        ))}
        {rows.map((r, i) => {
          const y = i * rowH + 12;
          const color = !r.interval ? '#999' : r.significant ? (r.interval[0] + r.interval[1] > 0 ? '#2dbd7a' : '#f04f58') : '#1d4aff';
          return (
            <g data-variant={r.key}>
              <text x={left - 8} y={y + 4} text-anchor="end" font-size="13" font-weight="600">{r.key}</text>
              {r.interval && <rect x={x(r.interval[0])} y={y - 7} width={Math.max(2, x(r.interval[1]) - x(r.interval[0]))} height={14} rx={3} fill={color} opacity={0.85} />}
              <text x={left - 8} y={y + 18} text-anchor="end" font-size="10" fill="#555">{r.interval ? r.label : 'baseline'}</text>
              {r.interval && <text x={x((r.interval[0] + r.interval[1]) / 2)} y={y + 20} text-anchor="middle" font-size="10" fill="#333">{`${(r.interval[0] * 100).toFixed(1)}% … ${(r.interval[1] * 100).toFixed(1)}%`}</text>}
            </g>
          );
        })}
      </svg>
      <figcaption>{caption}</figcaption>
    </figure>
  );
}
