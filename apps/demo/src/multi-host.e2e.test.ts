/**
 * The standalone cluster across real network hosts: three Linux network namespaces joined by a
 * bridge, a job manager in one and a task manager in each of the others, every process started
 * with `ip netns exec <ns> node apps/demo/dist/main.js ...`. It needs root (CI and the developer
 * machines run as root) and skips, saying why, where namespaces cannot be created.
 */
import { execFileSync } from "node:child_process";
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

/** A subnet only these namespaces use; nothing outside them gets an address in it. */
const SUBNET = "10.77.0";
const SUFFIX = String(process.pid % 100_000);

interface Host {
  /** Network namespace name. */
  readonly ns: string;
  readonly address: string;
  /** Its interface on the bridge (the bridge port lives in the job manager's namespace). */
  readonly bridgePort: string | undefined;
}

const JOB_MANAGER: Host = {
  ns: `sluice-jm-${SUFFIX}`,
  address: `${SUBNET}.1`,
  bridgePort: undefined,
};
const WORKERS: readonly Host[] = [
  { ns: `sluice-tm1-${SUFFIX}`, address: `${SUBNET}.2`, bridgePort: `tm1-${SUFFIX}` },
  { ns: `sluice-tm2-${SUFFIX}`, address: `${SUBNET}.3`, bridgePort: `tm2-${SUFFIX}` },
];
const HOSTS = [JOB_MANAGER, ...WORKERS];

function ip(...args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function inNamespace(host: Host, ...command: string[]): string {
  return ip("netns", "exec", host.ns, ...command);
}

/** Creates the namespaces and the bridge; returns why it cannot, or undefined. */
function buildTopology(): string | undefined {
  if (process.platform !== "linux")
    return `network namespaces need Linux, this is ${process.platform}`;
  if (process.getuid?.() !== 0) return "creating network namespaces needs root";
  try {
    for (const host of HOSTS) {
      ip("netns", "add", host.ns);
      inNamespace(host, "ip", "link", "set", "lo", "up");
    }
    // The bridge (a switch) sits in the job manager's namespace, with the job manager's address.
    inNamespace(JOB_MANAGER, "ip", "link", "add", "br0", "type", "bridge");
    inNamespace(JOB_MANAGER, "ip", "addr", "add", `${JOB_MANAGER.address}/24`, "dev", "br0");
    inNamespace(JOB_MANAGER, "ip", "link", "set", "br0", "up");
    for (const worker of WORKERS) {
      const port = worker.bridgePort as string;
      inNamespace(
        JOB_MANAGER,
        "ip",
        "link",
        "add",
        port,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        worker.ns,
      );
      inNamespace(JOB_MANAGER, "ip", "link", "set", port, "master", "br0");
      inNamespace(JOB_MANAGER, "ip", "link", "set", port, "up");
      inNamespace(worker, "ip", "addr", "add", `${worker.address}/24`, "dev", "eth0");
      inNamespace(worker, "ip", "link", "set", "eth0", "up");
    }
    // A veth reports UP once both ends are up; until then packets would be dropped.
    const deadline = Date.now() + 5_000;
    for (const worker of WORKERS) {
      while (!/\bUP\b/.test(ip("-n", worker.ns, "-br", "link", "show", "eth0"))) {
        if (Date.now() > deadline) return `eth0 in ${worker.ns} did not come up`;
        execFileSync("sleep", ["0.05"]);
      }
    }
    return undefined;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer | string }).stderr?.toString().trim();
    return `cannot build the network namespaces: ${stderr || (error as Error).message}`;
  }
}

function removeTopology(): void {
  for (const host of HOSTS) {
    try {
      ip("netns", "del", host.ns);
    } catch {
      // Not created (the set-up failed early): nothing to remove.
    }
  }
}

function topology(): string {
  return [
    "network topology of this test (three namespaces on one bridge):",
    `  ${JOB_MANAGER.ns}  br0 ${JOB_MANAGER.address}/24   job manager`,
    ...WORKERS.map(
      (w) => `  ${w.ns}  eth0 ${w.address}/24  task manager  (veth peer ${w.bridgePort} on br0)`,
    ),
  ].join("\n");
}

let unavailable: string | undefined;

beforeAll(() => {
  buildDemoIfStale();
  removeTopology();
  unavailable = buildTopology();
  if (unavailable === undefined) console.log(topology());
  else console.warn(`multi-host test skipped: ${unavailable}`);
}, 300_000);

afterEach(killDemoProcesses);
afterAll(removeTopology);

function start(host: Host, args: readonly string[]): DemoProcess {
  return startDemo(args, { prefix: ["ip", "netns", "exec", host.ns] });
}

function startCluster(jobArgs: readonly string[]): { jm: DemoProcess; tms: DemoProcess[] } {
  const jm = start(JOB_MANAGER, [
    "jobmanager",
    "--bind",
    `${JOB_MANAGER.address}:6123`,
    "--task-managers",
    "2",
    ...jobArgs,
  ]);
  const tms = WORKERS.map((worker) =>
    start(worker, ["taskmanager", "--jobmanager", `${JOB_MANAGER.address}:6123`]),
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

/** Established TCP connections in `host`'s namespace, as `local peer users` lines. */
function connections(host: Host): string[] {
  return inNamespace(host, "ss", "-Htnp", "state", "established")
    .split("\n")
    .filter((line) => line.trim() !== "");
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
        for (const [i, worker] of WORKERS.entries()) {
          const other = WORKERS[1 - i] as Host;
          const remote = ports.get(other.address);
          const self = ports.get(worker.address);
          if (remote === undefined || self === undefined) return false;
          const line = connections(worker).find(
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
    const victim = WORKERS[1] as Host;
    const { index, pid } = dataPorts(jm.output().stdout).get(victim.address) ?? {
      index: -1,
      pid: -1,
    };
    // Unplug the host, then kill its task manager: no FIN or RST reaches anyone, as when a
    // machine loses power. Only the missing heartbeats tell the job manager.
    inNamespace(JOB_MANAGER, "ip", "link", "set", victim.bridgePort as string, "down");
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
  }, 60_000);
});
