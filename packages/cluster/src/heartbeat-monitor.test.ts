import { spawn } from "node:child_process";
import { once } from "node:events";
import { blockEventLoop, waitFor } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { HeartbeatMonitor } from "./heartbeat-monitor.js";

describe("HeartbeatMonitor", () => {
  it("reports a peer silent for the timeout, once", async () => {
    const silences: number[] = [];
    const monitor = new HeartbeatMonitor(100, (silentForMs) => silences.push(silentForMs));
    await waitFor(() => silences.length === 1, { what: "the timeout" });
    monitor.received();
    expect(silences).toHaveLength(1);
    expect(silences[0]).toBeGreaterThanOrEqual(99);
  });

  it("counts heartbeats that arrived while the event loop was blocked past the timeout", async () => {
    const timeoutMs = 300;
    // A peer in another process goes on beating (every 20 ms) while this event loop is blocked.
    const peer = spawn(
      process.execPath,
      ["-e", "setInterval(() => process.stdout.write('beat\\n'), 20)"],
      { stdio: ["ignore", "pipe", "ignore"] },
    );
    const silences: number[] = [];
    const monitor = new HeartbeatMonitor(timeoutMs, (silentForMs) => silences.push(silentForMs));
    try {
      peer.stdout.on("data", () => monitor.received());
      await once(peer.stdout, "data");
      // When the loop turns again, the monitor's timer is due before the pipe is read.
      blockEventLoop(3 * timeoutMs);
      await new Promise((resolve) => setTimeout(resolve, timeoutMs / 2));
      expect(silences).toEqual([]);
    } finally {
      monitor.stop();
      peer.kill();
      await once(peer, "exit");
    }
  });
});
