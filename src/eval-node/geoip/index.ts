/**
 * GeoIP person properties for /flags (spec/API.md §4.4 rule 6; research/posthog-flag-evaluation.md
 * §3.1 step 4): the caller's address is looked up in a GeoLite2-City database (`maxmind`,
 * `config.geoipDbPath`) and gives up to seven `$geoip_*` person properties, which fill only keys
 * the request did not supply (a JSON null counts as not supplied), unless `geoip_disable` is true.
 *
 * The database (~60 MB) is read once into a SharedArrayBuffer, so the IO thread and every pool
 * worker read the same bytes without copying (see {@link loadGeoipBytes}); a lookup is a few
 * microseconds of tree walk and allocates only the result.
 */
import fs from 'node:fs';
import net from 'node:net';
import { Reader, type CityResponse } from 'maxmind';

/** The `$geoip_*` properties a lookup can give (names as PostHog's Rust service sets them). */
export type GeoipProperties = Record<string, string>;

/** Looks addresses up; `lookup` returns null for private, malformed or unknown addresses. */
export interface Geoip {
  lookup(ip: string): GeoipProperties | null;
}

/** A Geoip that knows nothing (no database, or `geoip_disable` everywhere). */
export const NO_GEOIP: Geoip = Object.freeze({ lookup: () => null });

/** The last file {@link loadGeoipBytes} read: its identity and the bytes (never written to). */
let lastRead: { key: string; bytes: Uint8Array } | null = null;

/**
 * Reads the .mmdb file at `path` into shared memory (one copy per process, shareable with
 * worker threads through `workerData`). The same file (path, device, inode, size and
 * modification time) asked for again in the process gets the same bytes: reading and zeroing
 * 60 MB costs 40–75 ms of CPU, paid once however often a node starts in the process (a node
 * restarted in process, the embedded `start`, tests). @throws when the file cannot be read.
 */
export function loadGeoipBytes(path: string): Uint8Array {
  const st = fs.statSync(path, { bigint: true });
  const key = `${path}\0${st.dev}\0${st.ino}\0${st.size}\0${st.mtimeNs}`;
  if (lastRead?.key === key) return lastRead.bytes;
  const size = Number(st.size);
  const shared = new Uint8Array(new SharedArrayBuffer(size));
  const fd = fs.openSync(path, 'r');
  try {
    let off = 0;
    while (off < size) {
      const n = fs.readSync(fd, shared, off, size - off, off);
      if (n === 0) break;
      off += n;
    }
  } finally {
    fs.closeSync(fd);
  }
  lastRead = { key, bytes: shared };
  return shared;
}

/** A Geoip over database bytes from {@link loadGeoipBytes} (no copy is made). */
export function geoipFromBytes(bytes: Uint8Array): Geoip {
  const reader = new Reader<CityResponse>(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  return {
    lookup(ip: string): GeoipProperties | null {
      if (net.isIP(ip) === 0 || !isPublicAddress(ip)) return null;
      let r: CityResponse | null;
      try {
        r = reader.get(ip);
      } catch {
        return null;
      }
      if (!r) return null;
      const out: GeoipProperties = {};
      const city = r.city?.names?.en;
      if (city) out.$geoip_city_name = city;
      const country = r.country?.names?.en;
      if (country) out.$geoip_country_name = country;
      const countryCode = r.country?.iso_code;
      if (countryCode) out.$geoip_country_code = countryCode;
      const continent = r.continent?.names?.en;
      if (continent) out.$geoip_continent_name = continent;
      const continentCode = r.continent?.code;
      if (continentCode) out.$geoip_continent_code = continentCode;
      const postal = r.postal?.code;
      if (postal) out.$geoip_postal_code = postal;
      const tz = r.location?.time_zone;
      if (tz) out.$geoip_time_zone = tz;
      return out;
    },
  };
}

/**
 * The address to look up: the first public address in `X-Forwarded-For` (entries may carry a
 * port or IPv6 brackets), else `peer` (the socket's remote address), else null.
 */
export function clientAddress(forwardedFor: string, peer: string): string | null {
  if (forwardedFor !== '') {
    for (const part of forwardedFor.split(',')) {
      const ip = normalizeAddress(part);
      if (ip !== null && isPublicAddress(ip)) return ip;
    }
  }
  // Fast reject of the common non-public peers (loopback, private) before parsing: the peer is
  // looked at on every request that has no public X-Forwarded-For entry.
  if (peer === '' || peer.startsWith('127.') || peer.startsWith('10.') || peer.startsWith('192.168.') || peer === '::1' || peer.startsWith('::ffff:127.')) return null;
  const p = normalizeAddress(peer);
  return p !== null && isPublicAddress(p) ? p : null;
}

/** Strips spaces, `[v6]:port`, `v4:port` and the `::ffff:` mapped prefix; null when not an address. */
export function normalizeAddress(raw: string): string | null {
  let s = raw.trim();
  if (s === '') return null;
  if (s.startsWith('[')) {
    const end = s.indexOf(']');
    if (end < 0) return null;
    s = s.slice(1, end);
  } else if (s.includes('.') && s.indexOf(':') === s.lastIndexOf(':') && s.includes(':')) {
    s = s.slice(0, s.indexOf(':'));
  }
  if (s.toLowerCase().startsWith('::ffff:') && net.isIPv4(s.slice(7))) s = s.slice(7);
  return net.isIP(s) === 0 ? null : s;
}

/** False for loopback, private, link-local, CGNAT, unique-local, unspecified and documentation-free special ranges. */
export function isPublicAddress(ip: string): boolean {
  if (net.isIPv4(ip)) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    if (a === 10 || a === 127 || a === 0 || a >= 224) return false;
    if (a === 169 && b === 254) return false;
    if (a === 172 && b >= 16 && b <= 31) return false;
    if (a === 192 && b === 168) return false;
    if (a === 100 && b >= 64 && b <= 127) return false;
    return true;
  }
  const v = ip.toLowerCase();
  if (v === '::' || v === '::1') return false;
  if (v.startsWith('fe8') || v.startsWith('fe9') || v.startsWith('fea') || v.startsWith('feb')) return false;
  if (v.startsWith('fc') || v.startsWith('fd') || v.startsWith('ff')) return false;
  return true;
}

/**
 * Copies `geo` into `props` for keys `props` lacks or holds null (research §3.1 step 4); returns
 * `props` itself when nothing is added, else a new object (the request's object is not mutated).
 */
export function fillGeoip(props: Record<string, unknown> | undefined, geo: GeoipProperties | null): Record<string, unknown> | undefined {
  if (geo === null) return props;
  let out: Record<string, unknown> | undefined;
  for (const k in geo) {
    if (props === undefined || props[k] === undefined || props[k] === null) {
      out ??= { ...props };
      out[k] = geo[k];
    }
  }
  return out ?? props;
}
