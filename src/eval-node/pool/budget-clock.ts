/**
 * The budget a node gives one `/flags` or OFREP evaluation (src/evaluation/budget.ts): `budgetMs`
 * of this thread's time. A pure wall clock would charge a request for time its thread was not
 * running (descheduled on a busy machine, or stopped for another thread), and fail ordinary flags
 * of a healthy project under load; a thread CPU clock costs ~0.7 µs a read (memory/libc.ts),
 * too much for the one read per flag the core makes. So the clock is the wall clock until the
 * wall deadline, and from then on the thread's CPU time since the evaluation began: a request is
 * cut short only once its thread has really spent `budgetMs` on it. Only projects whose flags or
 * cohorts use `regex` pay for it (one CPU read at the start); every other operator costs a few
 * comparisons per flag, so their evaluations run without a budget. Where the thread clock is
 * unavailable (not Linux with glibc) the budget is the wall clock.
 */
import type { CompiledProject, EvaluationBudget } from '../../evaluation/index.js';
import { loadLibc } from '../memory/libc.js';

const wall: () => number = performance.now.bind(performance);

/** The budget of one evaluation of `project`, or null when it needs none (see the module doc). */
export function evaluationBudget(project: CompiledProject, budgetMs: number): EvaluationBudget | null {
  if (!project.usesRegex) return null;
  const start = wall();
  const deadline = start + budgetMs;
  const libc = loadLibc();
  if (libc === null) return { now: wall, deadline };
  const cpuStart = libc.threadCpuMs();
  return {
    deadline,
    now: () => {
      const t = wall();
      return t < deadline ? t : start + (libc.threadCpuMs() - cpuStart);
    },
  };
}
