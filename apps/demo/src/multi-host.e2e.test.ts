/**
 * The standalone cluster across real network hosts: three Linux network namespaces joined by a
 * bridge, a job manager in one and a task manager in each of the others, every process started
 * with `ip netns exec <ns> node apps/demo/dist/main.js ...`. It needs root (CI and the developer
 * machines run as root) and skips, saying why, where namespaces cannot be created.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  buildDemoIfStale,
  type DemoProcess,
  isAlive,
  killDemoProcesses,
  lastJsonLine,
  startDemo,
  until,
} from "./test-support/demo-process.js";
import { type NamespaceHost, NetworkNamespaces } from "./test-support/network-namespaces.js";

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
      `${network.describe()}\n  the job manager in the hub, a task manager in each worker`,
    );
  }
}, 300_000);

afterEach(killDemoProcesses);
afterAll(() => network?.remove());

/** The namespaces, in a test that did not skip. */
function net(): NetworkNamespaces {
  return network as NetworkNamespaces;
}

function start(host: NamespaceHost, args: readonly string[]): DemoProcess {
  return startDemo(args, { prefix: net().prefix(host) });
}

function startCluster(jobArgs: readonly string[]): { jm: DemoProcess; tms: DemoProcess[] } {
  const { hub, workers } = net();
  const jm = start(hub, [
    "jobmanager",
    "--bind",
    `${hub.address}:6123`,
    "--task-managers",
    "2",
    ...jobArgs,
  ]);
  const tms = workers.map((worker) =>
    start(worker, ["taskmanager", "--jobmanager", `${hub.address}:6123`]),
  );
  return { jm, tms };
}

/** The data ports the job manager announced, by task-manager address. */
function dataPorts(jmOutput: string): Map<string, { index: number; pid: number; port: number }> {
  const ports = new Map<string, { index: number; pid: number; port: number }>();
  for (const match of jmOutput.matchAll(
    /task manager (\d+) \(pid (\d+)\) ready: data port ([\d.]+):(\d+)/g,
  )) {
    ports.set(match[3] as string, {
      index: Number(match[1]),
      pid: Number(match[2]),
      port: Number(match[4]),
    });
  }
  return ports;
}

describe.each(["tcp", "ws"])("a cluster across three network namespaces over %s", (shuffle) => {
  it("runs the word count verified, with data connections between the task managers' addresses", async (context) => {
    if (unavailable !== undefined) {
      context.skip(unavailable);
      return;
    }
    const { jm, tms } = startCluster(["--shuffle", shuffle, "--records", "3m", "--json"]);
    let ports = new Map<string, { index: number; pid: number; port: number }>();
    await until(
      () => {
        ports = dataPorts(jm.output().stderr);
        return ports.size === 2 || jm.output().code !== null;
      },
      30_000,
      "both task managers to register",
    );
    // Each task manager reads a share of the other's partition: its client connects to the other
    // namespace's data port, from its own non-loopback address.
    const crossings: string[] = [];
    await until(
      () => {
        crossings.length = 0;
        const { workers } = net();
        for (const [i, worker] of workers.entries()) {
          const other = workers[1 - i] as NamespaceHost;
          const remote = ports.get(other.address);
          const self = ports.get(worker.address);
          if (remote === undefined || self === undefined) return false;
          const line = net()
            .connections(worker)
            .find(
              (l) =>
                l.includes(` ${worker.address}:`) &&
                l.includes(` ${other.address}:${remote.port} `) &&
                l.includes(`pid=${self.pid},`),
            );
          if (line !== undefined) crossings.push(`${worker.ns}: ${line.replace(/\s+/g, " ")}`);
        }
        return crossings.length === 2 || jm.output().code !== null;
      },
      30_000,
      "data connections between the namespaces",
    );
    console.log(
      `data connections that crossed namespaces (${shuffle}):\n  ${crossings.join("\n  ")}`,
    );
    expect(crossings).toHaveLength(2);
    for (const line of crossings) expect(line).not.toMatch(/127\.0\.0\.1/);

    const run = await jm.done;
    expect(run.code, run.stderr).toBe(0);
    expect(lastJsonLine(run.stdout)).toMatchObject({
      verified: true,
      records: 3_000_000,
      buffersReturned: true,
      taskManagers: 2,
    });
    for (const tm of tms) expect((await tm.done).code).toBe(0);
  }, 60_000);
});

describe("a cluster across three network namespaces when a task manager's host vanishes", () => {
  it("fails the job within heartbeat.timeout plus a bound, naming the task manager and its address, and nothing is left running", async (context) => {
    if (unavailable !== undefined) {
      context.skip(unavailable);
      return;
    }
    const timeoutMs = 3_000;
    const { jm, tms } = startCluster([
      "--records",
      "200m",
      "-D",
      "heartbeat.interval=500ms",
      "-D",
      `heartbeat.timeout=${timeoutMs}ms`,
    ]);
    await until(
      () =>
        /\] [1-9][\d,]*\/200,000,000 words/.test(jm.output().stdout) || jm.output().code !== null,
      30_000,
      "the job to run",
    );
    const victim = net().workers[1] as NamespaceHost;
    const { index, pid } = dataPorts(jm.output().stdout).get(victim.address) ?? {
      index: -1,
      pid: -1,
    };
    // Unplug the host, then kill its task manager: no FIN or RST reaches anyone, as when a
    // machine loses power. Only the missing heartbeats tell the job manager.
    net().cut(victim);
    const victimProcess = tms[1] as DemoProcess;
    victimProcess.child.kill("SIGKILL");
    const killedAt = Date.now();
    const run = await jm.done;
    const failedAfterMs = Date.now() - killedAt;
    console.log(
      `the job failed ${failedAfterMs} ms after the host vanished (heartbeat.timeout ${timeoutMs} ms)`,
    );
    expect(failedAfterMs).toBeLessThan(timeoutMs + 10_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `error: the job failed: task manager ${index} (pid ${pid}) at ${victim.address} was lost: no heartbeat for`,
    );
    const survivor = await (tms[0] as DemoProcess).done;
    expect(survivor.code).toBe(1);
    expect((await victimProcess.done).signal).toBe("SIGKILL");
    for (const p of [jm, ...tms]) expect(isAlive(p.child.pid as number)).toBe(false);
    net().reconnect(victim);
  }, 60_000);
});
