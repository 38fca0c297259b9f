/**
 * Structured logging with pino (STYLE.md rule 7): one root logger, a child per component,
 * PostHog field names (`project_id`, `distinct_id`), never key material.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** Creates the root logger at `level` (`silent` in tests). */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'switchyard' } });
}
