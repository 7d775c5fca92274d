/**
 * The standalone cluster on one host: `main.js jobmanager` and `main.js taskmanager` started as
 * separate commands, talking over the control plane on 127.0.0.1. (Across real network
 * namespaces: multi-host.e2e.test.ts.)
 */

import { createTestPki, type TestPki } from "@sluice/shuffle-tck/transport";
import { afterAll, describe, expect, it } from "vitest";
import {
  type DemoProcess,
  isAlive,
  lastJsonLine,
  startDemo,
  until,
  useDemoProcesses,
} from "./test-support/demo-process.js";

useDemoProcesses();

/** Starts a job manager on a free port of 127.0.0.1 and resolves with it and its port. */
async function startJobManager(
  args: readonly string[],
): Promise<{ jm: DemoProcess; port: number }> {
  const jm = startDemo(["jobmanager", "--bind", "127.0.0.1:0", ...args]);
  let port = 0;
  await until(
    () => {
      const { stdout, stderr, code } = jm.output();
      if (code !== null) throw new Error(`the job manager exited with ${code}:\n${stderr}`);
      const match = /listening on wss?:\/\/127\.0\.0\.1:(\d+)/.exec(stdout + stderr);
      port = Number(match?.[1] ?? 0);
      return port > 0;
    },
    20_000,
    "the job manager to listen",
  );
  return { jm, port };
}

function taskManager(port: number, args: readonly string[] = []): DemoProcess {
  return startDemo(["taskmanager", "--jobmanager", `127.0.0.1:${port}`, ...args]);
}

/** How long task managers that lost their job manager register again, here. */
const SHORT_REGISTRATION = ["-D", "taskmanager.registration.timeout=3s"];

/** Heartbeats fast enough that a silent peer is noticed within seconds. */
const FAST_HEARTBEATS = ["-D", "heartbeat.interval=200ms", "-D", "heartbeat.timeout=1500ms"];

/**
 * A job manager with a 200 M-word job (far longer than any test waits) on two task managers,
 * once the job's progress line shows words moving.
 */
async function runningJob(
  args: readonly string[],
): Promise<{ jm: DemoProcess; tms: DemoProcess[] }> {
  const { jm, port } = await startJobManager(["--records", "200m", ...args]);
  const tms = [taskManager(port), taskManager(port)];
  await until(
    () => /\] [1-9][\d,]*\/200,000,000 words/.test(jm.output().stdout),
    30_000,
    "the job to run",
  );
  return { jm, tms };
}

describe("standalone cluster on 127.0.0.1", () => {
  it.each(["tcp", "ws"])(
    "runs the word count verified over %s with the roles started as separate commands; the task managers get the job's configuration and exit 0",
    async (shuffle) => {
      const { jm, port } = await startJobManager([
        "--shuffle",
        shuffle,
        "--records",
        "40k",
        "--json",
      ]);
      const tms = [taskManager(port), taskManager(port)];
      const run = await jm.done;
      expect(run.stderr).toContain("verified");
      expect(run.code).toBe(0);
      expect(lastJsonLine(run.stdout)).toMatchObject({
        verified: true,
        records: 40_000,
        buffersReturned: true,
        taskManagers: 2,
      });
      for (const tm of tms) {
        const tmRun = await tm.done;
        expect(tmRun.code).toBe(0);
        // The shuffle plugin came from the job manager: the task managers were given none.
        expect(tmRun.stdout).toMatch(
          new RegExp(
            `registered with the job manager at 127\\.0\\.0\\.1:${port}: data port 127\\.0\\.0\\.1:\\d+`,
          ),
        );
      }
    },
    60_000,
  );

  it("refuses a task manager that loaded another shuffle plugin with a clear message, and still runs the job with a matching one", async () => {
    const { jm, port } = await startJobManager(["--records", "20k", "--task-managers", "1"]);
    const wrong = await taskManager(port, ["--shuffle", "ws"]).done;
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("SLUICE_ERR_CONFIG");
    expect(wrong.stderr).toContain(
      "loaded the shuffle plugin @sluice/shuffle-ws#WsShuffleServiceFactory",
    );
    expect(wrong.stderr).toContain(
      "but the job manager runs @sluice/shuffle-tcp#TcpShuffleServiceFactory",
    );
    const right = taskManager(port);
    const run = await jm.done;
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("verified");
    expect(run.stderr).toContain("warning: refused the task manager with pid");
    expect((await right.done).code).toBe(0);
  }, 60_000);

  it("drops a task manager that registers and is gone before the job starts, and runs the job verified on the others", async () => {
    const { jm, port } = await startJobManager(["--records", "20k", "--task-managers", "2"]);
    const early = taskManager(port);
    await until(
      () => /task manager 0 \(pid \d+\) ready/.test(jm.output().stdout),
      20_000,
      "it to register",
    );
    early.child.kill("SIGKILL");
    await early.done;
    const others = [taskManager(port), taskManager(port)];
    const run = await jm.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("verified");
    expect(run.stderr).toContain("ran no task of the job and is dropped from the pool");
    for (const tm of others) expect((await tm.done).code).toBe(0);
  }, 60_000);

  it("makes every task manager try to register again after the job manager is killed mid-job, then exit non-zero once taskmanager.registration.timeout passed", async () => {
    const { jm, tms } = await runningJob(SHORT_REGISTRATION);
    const killedAt = Date.now();
    jm.child.kill("SIGKILL");
    const runs = await Promise.all(tms.map((tm) => tm.done));
    const exitedAfterMs = Date.now() - killedAt;
    expect(exitedAfterMs).toBeGreaterThanOrEqual(3_000);
    expect(exitedAfterMs).toBeLessThan(3_000 + 10_000);
    for (const run of runs) {
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("registering again for up to 3000 ms");
      expect(run.stderr).toMatch(
        /lost the job manager: the control connection to the job manager at 127\.0\.0\.1:\d+ closed \(code 1006\); it could not register again within 3000 ms \(taskmanager\.registration\.timeout, \d+ attempts\): cannot reach the job manager/,
      );
    }
  }, 60_000);

  it("makes every task manager try to register again when the job manager stops requesting heartbeats, then exit non-zero", async () => {
    const { jm, tms } = await runningJob([...FAST_HEARTBEATS, ...SHORT_REGISTRATION]);
    // Frozen, its connections stay open: the task managers learn it only from the silence.
    jm.child.kill("SIGSTOP");
    const runs = await Promise.all(tms.map((tm) => tm.done));
    for (const run of runs) {
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        "lost the job manager: no heartbeat request from the job manager",
      );
      expect(run.stderr).toContain("it could not register again within 3000 ms");
    }
    jm.child.kill("SIGKILL");
  }, 60_000);

  it("fails the job when a task manager stops answering heartbeats, naming it and its address, and every process exits non-zero", async () => {
    const { jm, tms } = await runningJob([...FAST_HEARTBEATS, ...SHORT_REGISTRATION]);
    const frozen = /task manager 1 \(pid (\d+)\) ready/.exec(jm.output().stdout);
    const pid = Number(frozen?.[1]);
    // A frozen process keeps its sockets open: only the missing heartbeats reveal it.
    process.kill(pid, "SIGSTOP");
    const run = await jm.done;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `error: the job failed: task manager 1 (pid ${pid}) at 127.0.0.1 was lost: no heartbeat for`,
    );
    expect(run.stderr).toContain("(heartbeat.timeout 1500 ms)");
    process.kill(pid, "SIGCONT");
    const tmRuns = await Promise.all(tms.map((tm) => tm.done));
    for (const tmRun of tmRuns) expect(tmRun.code).toBe(1);
    for (const tm of [jm, ...tms]) expect(isAlive(tm.child.pid as number)).toBe(false);
  }, 60_000);
});

describe("one-command demo with internal TLS", () => {
  let pki: TestPki | undefined;
  afterAll(() => pki?.remove());

  it("runs verified with the control plane and the data plane mutually authenticated by the same certificates", async () => {
    pki = createTestPki("demo");
    const identity = pki.issue("cluster");
    const run = await startDemo([
      "--records",
      "20k",
      "--shuffle",
      "ws",
      "-D",
      "security.ssl.internal.enabled=true",
      "-D",
      `security.ssl.internal.ca=${pki.caCert}`,
      "-D",
      `security.ssl.internal.key=${identity.key}`,
      "-D",
      `security.ssl.internal.cert=${identity.cert}`,
      "--json",
    ]).done;
    expect(run.code).toBe(0);
    expect(lastJsonLine(run.stdout)).toMatchObject({ verified: true, buffersReturned: true });
  }, 60_000);
});
