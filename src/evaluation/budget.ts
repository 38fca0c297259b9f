/**
 * The evaluation budget of one `evaluateFlags` call: a deadline on a clock the caller injects,
 * so the core stays pure (it never reads a clock of its own). Past the deadline no more work is
 * started: the flags not yet answered become failed entries (code `timeout:evaluation_budget`,
 * reasons.ts) and
 * `errorsWhileComputingFlags` is true, which is how PostHog's Rust service answers a flag whose
 * evaluation hit a timeout (`FlagError::TimeoutError`, error code `timeout:<kind>`; healthy
 * flags keep their results; research/posthog-flag-evaluation.md §4 "Errors").
 *
 * Where the clock is read (kept off the common path): once before each flag (evaluate.ts), before
 * each regex search, and in `icontains` / `not_icontains` on values longer than
 * {@link CLOCK_CHECK_CHARS}. A backtracking regex search runs for at most the budget left
 * (regex.ts). A single search or a single flag that starts before the deadline is not
 * interrupted by it, so a request can overrun the budget by one such step; the subject and
 * program bounds in src/limits.ts keep that step short.
 *
 * The budget is installed for the duration of one synchronous `evaluateFlags` call (module
 * state, like evaluate.ts's scratch arrays: evaluation is synchronous and not re-entrant).
 * Without a budget every check is a null test and nothing is bounded.
 */

/** A deadline on an injected clock. */
export interface EvaluationBudget {
  /** Monotonic clock in milliseconds (the eval node passes `performance.now`). */
  readonly now: () => number;
  /** The instant, on `now`'s scale, after which no new work starts. */
  readonly deadline: number;
}

/** `icontains` / `not_icontains` read the clock only for values longer than this (UTF-16 code units). */
export const CLOCK_CHECK_CHARS = 1_024;

let clock: (() => number) | null = null;
let deadline = Infinity;
let spent = false;

/** Installs `budget` (null: unbounded) for the evaluation that starts now. */
export function beginBudget(budget: EvaluationBudget | null | undefined): void {
  clock = budget ? budget.now : null;
  deadline = budget ? budget.deadline : Infinity;
  spent = false;
}

/** Removes the installed budget (call in a `finally` after the evaluation). */
export function endBudget(): void {
  clock = null;
  deadline = Infinity;
  spent = false;
}

/** Whether the budget has run out (reads the clock; always false without a budget). Sticky once true. */
export function outOfBudget(): boolean {
  if (clock === null) return false;
  if (spent) return true;
  if (clock() >= deadline) spent = true;
  return spent;
}

/**
 * Milliseconds left before the deadline: `Infinity` without a budget, `0` (and the budget
 * marked spent) once it has run out.
 */
export function remainingMs(): number {
  if (clock === null) return Infinity;
  if (spent) return 0;
  const left = deadline - clock();
  if (left <= 0) { spent = true; return 0; }
  return left;
}

/** Records that a step was cut short by the deadline (its answer cannot be trusted). */
export function markSpent(): void {
  if (clock !== null) spent = true;
}

/** Whether some step has found the budget spent since {@link beginBudget} (does not read the clock). */
export function budgetSpent(): boolean {
  return spent;
}
