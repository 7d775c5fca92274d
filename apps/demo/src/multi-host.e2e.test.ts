/**
 * The demo as a thin client of a session cluster across real network hosts: three Linux network
 * namespaces joined by a bridge, `sluice jobmanager` in one (the hub, where the demo submits from
 * too) and a `sluice taskmanager --usrlib apps/demo/dist` in each of the others, every process
 * started with `ip netns exec <ns> ...`. It needs root (CI and the developer machines run as root)
 * and skips, saying why, where namespaces cannot be created.
 */
import { type NamespaceHost, NetworkNamespaces } from "@sluice/harness/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildDemoIfStale,
  isAlive,
  lastJsonLine,
  type SessionCluster,
  startDemo,
  startSessionCluster,
  until,
  useDemoProcesses,
} from "./test-support/demo-process.js";

/** The job manager's ports in the hub namespace (its own network stack: no other test uses them). */
const RPC_PORT = 6123;
const REST_PORT = 8081;

let network: NetworkNamespaces | undefined;
let unavailable: string | undefined;

beforeAll(() => {
  buildDemoIfStale();
  // A subnet only these namespaces use; nothing outside them gets an address in it.
  const created = NetworkNamespaces.create({ prefix: "sluice-mh", subnet: "10.77.0", workers: 2 });
  if (typeof created === "string") {
    unavailable = created;
    console.warn(`multi-host test skipped: ${unavailable}`);
  } else {
    network = created;
    console.log(
      `${network.describe()}\n  the job manager and the demo in the hub, a task manager in each worker`,
    );
  }
}, 300_000);

useDemoProcesses();
afterAll(() => network?.remove());

/** The namespaces, in a test that did not skip. */
function net(): NetworkNamespaces {
  return network as NetworkNamespaces;
}

/** The session cluster across the namespaces, with `configuration` (`-D` arguments). */
function startCluster(configuration: readonly string[]): Promise<SessionCluster> {
  const { hub, workers } = net();
  return startSessionCluster({
    host: hub.address,
    rpcPort: RPC_PORT,
    restPort: REST_PORT,
    configuration,
    jobManagerPrefix: net().prefix(hub),
    taskManagers: workers.map((worker) => net().prefix(worker)),
    overview: (url) => (net().listening(hub, REST_PORT) ? net().getJson(hub, url) : undefined),
  });
}

/** The demo in the hub, submitting to the session cluster. */
function submit(args: readonly string[]) {
  const { hub } = net();
  return startDemo(["--jobmanager", `${hub.address}:${REST_PORT}`, ...args], {
    prefix: net().prefix(hub),
  });
}

/** Stops the session cluster as an operator does (SIGTERM) and checks that nothing is left. */
async function stop(cluster: SessionCluster): Promise<void> {
  const live = cluster.processes.filter((p) => p.output().code === null && !p.output().signal);
  for (const p of live) p.child.kill("SIGTERM");
  for (const p of live) expect((await p.done).code, p.output().stderr).toBe(143);
  for (const p of cluster.processes) expect(isAlive(p.child.pid as number)).toBe(false);
}

describe.each(["tcp", "ws"])(
  "a session cluster across three network namespaces over %s",
  (shuffle) => {
    it("runs the demo's word count verified, with data connections between the task managers' addresses", async (context) => {
      if (unavailable !== undefined) {
        context.skip(unavailable);
        return;
      }
      const cluster = await startCluster(["-D", `shuffle-service-factory.class=${shuffle}`]);
      const demo = submit(["--records", "3m", "--json"]);
      // Each task manager reads a share of the other's partition: its client connects to the other
      // namespace's data port, from its own non-loopback address.
      const crossings: string[] = [];
      await until(
        () => {
          crossings.length = 0;
          const { workers } = net();
          for (const [i, worker] of workers.entries()) {
            const other = workers[1 - i] as NamespaceHost;
            const pid = cluster.tms[i]?.child.pid;
            const line = net()
              .connections(worker)
              .find(
                (l) =>
                  l.includes(` ${worker.address}:`) &&
                  l.includes(` ${other.address}:`) &&
                  l.includes(`pid=${pid},`),
              );
            if (line !== undefined) crossings.push(`${worker.ns}: ${line.replace(/\s+/g, " ")}`);
          }
          return crossings.length === 2 || demo.output().code !== null;
        },
        30_000,
        "data connections between the namespaces",
      );
      console.log(
        `data connections that crossed namespaces (${shuffle}):\n  ${crossings.join("\n  ")}`,
      );
      expect(crossings).toHaveLength(2);
      for (const line of crossings) expect(line).not.toMatch(/127\.0\.0\.1/);

      const run = await demo.done;
      expect(run.code, run.stderr).toBe(0);
      expect(lastJsonLine(run.stdout)).toMatchObject({
        verified: true,
        records: 3_000_000,
        taskManagers: 2,
      });
      await stop(cluster);
    }, 60_000);
  },
);

describe("a session cluster across three network namespaces when a task manager's host vanishes", () => {
  it("fails the job within heartbeat.timeout plus a bound, naming the task manager's address; the rest of the cluster runs on", async (context) => {
    if (unavailable !== undefined) {
      context.skip(unavailable);
      return;
    }
    const timeoutMs = 3_000;
    const cluster = await startCluster([
      "-D",
      "heartbeat.interval=500ms",
      "-D",
      `heartbeat.timeout=${timeoutMs}ms`,
    ]);
    const demo = submit(["--records", "200m"]);
    await until(
      () =>
        /\] [1-9][\d,]*\/200,000,000 words/.test(demo.output().stdout) ||
        demo.output().code !== null,
      30_000,
      "the job to run",
    );
    const victim = net().workers[1] as NamespaceHost;
    // Unplug the host, then kill its task manager: no FIN or RST reaches anyone, as when a
    // machine loses power. Only the missing heartbeats tell the job manager.
    net().cut(victim);
    const victimProcess = cluster.tms[1] as SessionCluster["tms"][number];
    victimProcess.child.kill("SIGKILL");
    const killedAt = Date.now();
    const run = await demo.done;
    const failedAfterMs = Date.now() - killedAt;
    console.log(
      `the job failed ${failedAfterMs} ms after the host vanished (heartbeat.timeout ${timeoutMs} ms)`,
    );
    expect(failedAfterMs).toBeLessThan(timeoutMs + 10_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `task manager \\d+ \\(pid ${victimProcess.child.pid}\\) at ${victim.address.replaceAll(".", "\\.")} was lost: no heartbeat for`,
      ),
    );
    expect((await victimProcess.done).signal).toBe("SIGKILL");
    // The job failed; the session cluster did not: its job manager and the other task manager run on.
    expect(cluster.jm.output().code).toBeNull();
    expect(cluster.tms[0]?.output().code).toBeNull();
    net().reconnect(victim);
    await stop(cluster);
  }, 60_000);
});
