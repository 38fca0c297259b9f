/**
 * JSON text exactly as Python's `json.dumps` writes it with default arguments (`", "` and
 * `": "` separators, non-ASCII escaped as `\uXXXX`). PostHog normalises object payloads with
 * `json.dumps`, so a payload sent as an object is stored as the same string PostHog would store
 * (research/posthog-management-api.md §1.2 "Payloads").
 */

/** Python-style `json.dumps(value)`. @throws TypeError for values JSON cannot hold (undefined, functions, bigint, NaN). */
export function pythonJsonDumps(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean': return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('non-finite number');
      return Number.isInteger(value) && !Object.is(value, -0) ? String(value) : pythonFloat(value);
    case 'string': return quote(value);
    case 'object': {
      if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
      const parts: string[] = [];
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (v === undefined) continue;
        parts.push(`${quote(k)}: ${pythonJsonDumps(v)}`);
      }
      return `{${parts.join(', ')}}`;
    }
    default: throw new TypeError(`cannot encode ${typeof value}`);
  }
}

/** Python `repr(float)`: shortest round-trip digits, always with a decimal point or exponent. */
function pythonFloat(n: number): string {
  if (Object.is(n, -0)) return '-0.0';
  let s = String(n);
  if (/e/.test(s)) {
    // JS: 1e+21 / 1e-7 → Python: 1e+21 / 1e-07.
    s = s.replace(/e([+-])(\d)$/, 'e$10$2');
    return s;
  }
  return s.includes('.') ? s : `${s}.0`;
}

function quote(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += s[i];
  }
  return out + '"';
}
