import { Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { InProcessCluster } from "./in-process-cluster.js";

/**
 * A network-shuffle plugin's data connections keep TCP keepalive from declaring a peer dead
 * before the cluster's heartbeat would: both ends idle `heartbeat.timeout` (rounded up to whole
 * seconds) before the first probe, as `keepAliveDelayFor` says. libuv then probes once a second,
 * ten times, so a network cut shorter than the heartbeat's timeout keeps the connection.
 *
 * @param name - the plugin's name, for the test names.
 * @param factory - its `shuffle-service-factory.class` (the built entry).
 */
export function describeKeepAliveSuite(name: string, factory: string): void {
  describe(`TCP keepalive on the ${name} data connections`, () => {
    let cluster: InProcessCluster | undefined;

    afterEach(async () => {
      vi.restoreAllMocks();
      await cluster?.close();
      cluster = undefined;
    });

    it("idles heartbeat.timeout before probing, at both ends of a data connection", async () => {
      // Node offers no getter for SO_KEEPALIVE: record the calls on the real sockets instead.
      const calls: { socket: Socket; enable: boolean | undefined; delay: number | undefined }[] =
        [];
      const original = Socket.prototype.setKeepAlive;
      vi.spyOn(Socket.prototype, "setKeepAlive").mockImplementation(function (
        this: Socket,
        enable?: boolean,
        delay?: number,
      ) {
        calls.push({ socket: this, enable, delay });
        return original.call(this, enable, delay);
      });
      cluster = new InProcessCluster(factory, {
        "taskmanager.memory.network.min": "1mb",
        "taskmanager.memory.segment-size": "4kb",
        "heartbeat.timeout": "2500ms",
      });
      const producer = await cluster.startExecutor();
      const consumer = await cluster.startExecutor();
      const { execution } = await cluster.deploy(
        { producers: 1, consumers: 1, plan: { records: 100, padding: 8 } },
        producer,
        consumer,
      );
      expect((await execution.terminated).error).toBeUndefined();
      const enabled = calls.filter((call) => call.enable === true);
      // The consumer's socket (it connected to the data port) and the server's accepted one.
      const ports = new Set(enabled.map((call) => call.socket.localPort));
      expect(ports.size).toBeGreaterThanOrEqual(2);
      expect(enabled.map((call) => call.delay).filter((delay) => delay !== 3_000)).toEqual([]);
    }, 60_000);
  });
}
