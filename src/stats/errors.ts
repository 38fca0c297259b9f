/**
 * The two ways the statistics module says no:
 * - {@link InputError}: the input itself is wrong (a missing field, an unknown option, impossible
 *   sufficient statistics); the whole call is refused with a message saying what to fix (the CLI
 *   exits 2, the query endpoint answers a validation error).
 * - {@link StatsError} (effect.ts): the input is well formed but one comparison cannot be
 *   computed (a zero control mean, no variance); that variant's statistics come back null with
 *   an `error`, as PostHog leaves them.
 */

/** Bad input: the message says what to fix. */
export class InputError extends Error {}
