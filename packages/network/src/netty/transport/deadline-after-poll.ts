/** A deadline armed by {@link deadlineAfterPoll}. */
export interface DeadlineAfterPoll {
  /** Disarms the deadline (the awaited thing happened, or the socket closed). Idempotent. */
  clear(): void;
}

/**
 * Calls `onExpired` once `ms` passed, unless cleared first, and only after the event loop's poll
 * phase read what had arrived by then. After a stall of the event loop (a long task, a slow host),
 * libuv's timers phase runs before the poll phase reads the bytes a peer sent during the stall, so
 * a timer alone would close a peer whose handshake or request was complete in the socket. The
 * verdict is therefore given in the check phase (`setImmediate`), which follows the poll phase:
 * whatever those bytes completed has cleared the deadline by then.
 *
 * Neither the timer nor the confirmation keeps the process alive.
 */
export function deadlineAfterPoll(ms: number, onExpired: () => void): DeadlineAfterPoll {
  let confirmation: NodeJS.Immediate | undefined;
  // Rounded up to whole milliseconds: a timer due a fraction early would find a deadline its
  // owner computes not yet passed, and be armed again.
  let timer: NodeJS.Timeout | undefined = setTimeout(
    () => {
      timer = undefined;
      confirmation = setImmediate(() => {
        confirmation = undefined;
        onExpired();
      });
      confirmation.unref();
    },
    Math.max(1, Math.ceil(ms)),
  );
  timer.unref();
  return {
    clear() {
      if (timer !== undefined) clearTimeout(timer);
      if (confirmation !== undefined) clearImmediate(confirmation);
      timer = undefined;
      confirmation = undefined;
    },
  };
}
