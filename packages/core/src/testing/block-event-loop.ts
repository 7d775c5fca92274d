/**
 * Keeps this thread busy for `ms`, as a long task or a slow host does: timers come due, and what
 * peers send meanwhile waits in the kernel until the event loop reads again. For tests of
 * deadlines that a stall of the event loop must not trip.
 */
export function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}
