/**
 * A pinger's round trips: one ping in flight at a time, timed from its send until the peer's
 * reply is noticed (`replied()`, called by the connection's data handler).
 */
export class RoundTrips {
  private waiting: (() => void) | undefined;

  /** Whether a ping awaits its reply. */
  get awaiting(): boolean {
    return this.waiting !== undefined;
  }

  /** The reply to the ping in flight came back. */
  replied(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }

  /** Sends `count` pings one after the other with `send`; returns each round trip in µs. */
  async time(count: number, send: () => void): Promise<number[]> {
    const samples: number[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const start = performance.now();
      const back = new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
      send();
      await back;
      samples[i] = (performance.now() - start) * 1000;
    }
    return samples;
  }
}
