/**
 * The median the benches report over rounds or repetitions: the middle value of the sorted
 * figures (the upper middle for an even count, as every bench table so far). `xs` must not be
 * empty; it is not changed.
 */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}
