import { type DeadlineAfterPoll, deadlineAfterPoll } from "@sluice/network/plugin";

/**
 * Watches for a peer's heartbeats (Flink's `HeartbeatMonitor`): each {@link received} restarts the
 * timer; when `heartbeat.timeout` passes without one, `onTimeout` runs once. The timer is unref'd,
 * so a monitor never keeps a process alive by itself.
 *
 * The timeout is judged after the event loop's poll phase read what had arrived
 * ({@link deadlineAfterPoll}): heartbeats the peer sent during a stall of this event loop (a long
 * task, a slow host) count.
 */
export class HeartbeatMonitor {
  private deadline: DeadlineAfterPoll | undefined;
  private lastHeartbeat = Date.now();
  private stopped = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly onTimeout: (silentForMs: number) => void,
  ) {
    this.arm();
  }

  /** A heartbeat (or its answer) arrived from the peer. */
  received(): void {
    if (this.stopped) return;
    this.lastHeartbeat = Date.now();
    this.arm();
  }

  /** Stops watching; `onTimeout` will not run. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.deadline?.clear();
  }

  private arm(): void {
    this.deadline?.clear();
    this.deadline = deadlineAfterPoll(this.timeoutMs, () => {
      this.stopped = true;
      this.onTimeout(Date.now() - this.lastHeartbeat);
    });
  }
}
