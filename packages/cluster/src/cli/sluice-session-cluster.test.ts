import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createTestPki } from "@sluice/core/test-certificates";
import { freePort, waitFor } from "@sluice/core/testing";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "@sluice/ha-etcd/testing";
import { afterEach, describe, expect, it } from "vitest";
import type { JobDetailsInfo, JobOverviewInfo } from "../rest/job-details-info.js";
import { RETRIEVAL_STARTED, SERVICES_OPENED } from "../test-support/counting-ha.mjs";
import { DISTRIBUTION_DIR } from "./distribution.js";

const SLUICE = path.join(DISTRIBUTION_DIR, "dist", "cli", "main.js");
/** `high-availability.type` of etcd's services that say on stderr when they are opened. */
const COUNTING_HA = `${fileURLToPath(new URL("../test-support/counting-ha.mjs", import.meta.url))}#CountingHighAvailabilityServicesFactory`;
const RUNTIME = pathToFileURL(
  path.join(DISTRIBUTION_DIR, "..", "runtime", "dist", "index.js"),
).href;

/**
 * A job module as a user writes one: `Numbers` subtasks emit 0..n-1 (n from the run's first
 * argument, each subtask its share, paced by the second argument in ms per 1,000 records), one
 * `Sum` checks it received each exactly once; a third argument `blocking` makes the exchange a
 * batch one.
 */
const JOB_MODULE = `
import { JobGraph, ResultPartitionType } from ${JSON.stringify(RUNTIME)};
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export default {
  userCode: {
    invokables: {
      numbers: async (task) => {
        const { records, pauseMs } = task.configuration;
        const writer = task.writer();
        for (let i = task.subtaskIndex; i < records; i += task.numberOfSubtasks) {
          if (!writer.isAvailable()) await writer.getAvailableFuture();
          writer.emit(i);
          if (pauseMs > 0 && i % 1000 < task.numberOfSubtasks) await pause(pauseMs);
          task.signal.throwIfAborted();
        }
      },
      sum: async (task) => {
        const { records } = task.configuration;
        let count = 0;
        let sum = 0;
        for await (const value of task.reader()) {
          count++;
          sum += value;
        }
        if (count !== records || sum !== (records * (records - 1)) / 2) {
          throw new Error("expected " + records + " numbers, got " + count + " summing to " + sum);
        }
        return { count, sum };
      },
    },
  },
  createJobGraph({ args }) {
    const records = Number(args[0]);
    const pauseMs = Number(args[1] ?? 0);
    const partitionType = args[2] === "blocking" ? ResultPartitionType.BLOCKING : undefined;
    const graph = new JobGraph("numbers " + records);
    const numbers = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers", configuration: { records, pauseMs } });
    const sum = graph.addVertex({ name: "Sum", parallelism: 1, invokable: "sum", configuration: { records } });
    graph.connect(numbers, sum, { partitioner: { name: "REBALANCE" }, serializer: "int32", partitionType });
    return graph;
  },
};
`;

interface Process {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

const processes: Process[] = [];
const folders: string[] = [];

afterEach(async () => {
  for (const process of processes) process.child.kill("SIGKILL");
  await Promise.all(processes.splice(0).map((process) => process.exited));
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** The files (not folders) under `folder`, at any depth. */
function filesUnder(folder: string): number {
  return readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) =>
    entry.isFile(),
  ).length;
}

/** Starts `sluice ...args` as a child process of its own. */
function sluice(...args: string[]): Process {
  const child = spawn(process.execPath, [SLUICE, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on("data", (chunk) => {
    output += String(chunk);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const started = { child, output: () => output, exited };
  processes.push(started);
  return started;
}

/** `sluice run` of the job module in `usrlib`, `options` before it and the job's `args` after. */
function runNumbers(options: readonly string[], usrlib: string, ...args: string[]): Process {
  return sluice(
    "run",
    ...options,
    "--code",
    "./numbers.mjs",
    path.join(usrlib, "numbers.mjs"),
    ...args,
  );
}

describe("a session cluster of sluice processes", () => {
  it("runs jobs submitted with sluice run on task managers that load them from their usrlib, lists them and cancels one", async () => {
    const usrlib = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
    folders.push(usrlib);
    writeFileSync(path.join(usrlib, "numbers.mjs"), JOB_MODULE);
    const rpcPort = await freePort();
    const restPort = await freePort();
    const rest = `127.0.0.1:${restPort}`;
    const jobManager = sluice(
      "jobmanager",
      "-D",
      "jobmanager.rpc.address=127.0.0.1",
      "-D",
      `jobmanager.rpc.port=${rpcPort}`,
      "-D",
      `rest.port=${restPort}`,
      "-D",
      "taskmanager.memory.network.min=8mb",
    );
    const taskManagers = [0, 1].map(() =>
      sluice("taskmanager", "--jobmanager", `127.0.0.1:${rpcPort}`, "--usrlib", usrlib),
    );
    const overview = async () =>
      (await (await fetch(`http://${rest}/overview`)).json()) as { taskmanagers: number };
    await waitFor(
      async () => (await overview().catch(() => ({ taskmanagers: 0 }))).taskmanagers === 2,
      {
        what: "two task managers registered",
        timeoutMs: 30_000,
      },
    );

    // The job module is loaded by sluice run here and by each task manager from its usrlib.
    const run = runNumbers(["--jobmanager", rest], usrlib, "50000");
    expect(await run.exited, run.output()).toBe(0);
    expect(run.output()).toMatch(/job [0-9a-f]{32} \(numbers 50000\) submitted/);
    expect(run.output()).toContain("is FINISHED");
    const finished = /job ([0-9a-f]{32})/.exec(run.output())?.[1] as string;

    // A long job, detached, then canceled.
    const detached = runNumbers(["-d", "-m", rest], usrlib, "100000000", "5");
    expect(await detached.exited, detached.output()).toBe(0);
    const running = /job ([0-9a-f]{32})/.exec(detached.output())?.[1] as string;
    await waitFor(
      async () => {
        const listed = sluice("list", "-m", rest);
        await listed.exited;
        return listed.output().includes(running) && /RUNNING/.test(listed.output());
      },
      { what: "the long job running", timeoutMs: 30_000 },
    );
    const listed = sluice("list", "-m", rest);
    expect(await listed.exited, listed.output()).toBe(0);
    expect(listed.output()).toMatch(new RegExp(`${finished}\\s+FINISHED`));
    const cancel = sluice("cancel", "-m", rest, running);
    expect(await cancel.exited, cancel.output()).toBe(0);
    expect(cancel.output()).toContain(`job ${running} ended CANCELED`);

    // A job whose code a task manager cannot load is refused before it starts, naming it.
    const refused = sluice(
      "run",
      "-m",
      rest,
      "--code",
      "./missing.mjs",
      path.join(usrlib, "numbers.mjs"),
      "10",
    );
    expect(await refused.exited, refused.output()).toBe(1);
    expect(refused.output()).toContain("SLUICE_ERR_TASK_DEPLOYMENT");
    expect(refused.output()).toContain("missing.mjs");

    // Stopping the job manager shuts the task managers down.
    jobManager.child.kill("SIGTERM");
    expect(await jobManager.exited, jobManager.output()).toBe(143);
    expect(await Promise.all(taskManagers.map((tm) => tm.exited))).toEqual([0, 0]);
  }, 120_000);
});

const etcdMissing = etcdUnavailableReason();

describe.skipIf(etcdMissing !== undefined)(
  "sluice processes with high availability on etcd",
  () => {
    let etcd: EtcdServer | undefined;
    afterEach(async () => {
      await etcd?.stop();
      etcd = undefined;
    });

    /**
     * The `-D` flags of every process of a cluster on `etcd` (plus `extra`), and a usrlib holding
     * the job module. No process is told where a job manager, its REST endpoint or its shuffle
     * manager is.
     */
    function haFlags(
      server: EtcdServer,
      shuffle: "tcp" | "remote",
      extra: readonly (readonly [string, string])[] = [],
    ) {
      const usrlib = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
      const storage = mkdtempSync(path.join(tmpdir(), "sluice-ha-storage-"));
      folders.push(usrlib, storage);
      writeFileSync(path.join(usrlib, "numbers.mjs"), JOB_MODULE);
      const flags = [
        ["high-availability.type", "etcd"],
        ["high-availability.etcd.endpoints", server.endpoint],
        ...extra,
        ["high-availability.storageDir", storage],
        ["high-availability.cluster-id", `${shuffle}-${process.pid}`],
        ["high-availability.etcd.lease-ttl", "2s"],
        ["taskmanager.memory.network.min", "8mb"],
        ["shuffle-service-factory.class", shuffle],
      ].flatMap(([key, value]) => ["-D", `${key}=${value}`]);
      return { flags, usrlib };
    }

    /** A `sluice jobmanager` with `flags`, its REST endpoint and shuffle manager on free ports. */
    async function startJobManager(flags: readonly string[], shuffle: "tcp" | "remote") {
      const restPort = await freePort();
      const managerPort = await freePort();
      const started = sluice(
        "jobmanager",
        ...flags,
        "-D",
        "jobmanager.rpc.port=0",
        "-D",
        `rest.port=${restPort}`,
        ...(shuffle === "remote" ? ["-D", `remote-shuffle.manager.rpc-port=${managerPort}`] : []),
      );
      return { ...started, rest: `127.0.0.1:${restPort}`, manager: `127.0.0.1:${managerPort}` };
    }

    /**
     * Two `sluice jobmanager` on etcd (the first elected leader, then a standby) and two
     * `sluice taskmanager` registered with the leader, loading the job module from a usrlib.
     */
    async function haSessionCluster(shuffle: "tcp" | "remote") {
      etcd = await startEtcd();
      const { flags, usrlib } = haFlags(etcd, shuffle);
      const first = await startJobManager(flags, shuffle);
      await waitFor(() => first.output().includes("elected leader"), {
        what: "the first job manager to lead",
        timeoutMs: 30_000,
      });
      const second = await startJobManager(flags, shuffle);
      const taskManagers = [0, 1].map(() => sluice("taskmanager", ...flags, "--usrlib", usrlib));
      await waitFor(() => (first.output().match(/ registered$/gm) ?? []).length === 2, {
        what: "two task managers registered with the leader",
        timeoutMs: 30_000,
      });
      return { flags, usrlib, first, second, taskManagers };
    }

    /** How many lines of `output` are `line`. */
    const count = (output: string, line: string) =>
      output.split("\n").filter((printed) => printed === line).length;

    it("submits with sluice run through leader retrieval, follows the job to the next leader after kill -9 of the first through the one leader retrieval it keeps open, and lists it there", async () => {
      const { flags: ha, usrlib, first, second } = await haSessionCluster("tcp");

      // The run's own services say when they are opened: etcd's, counted. Paced to last at least
      // 1.5 s: the kill comes as soon as sluice run reports RUNNING (it asks every 100 ms), and
      // the next leader runs the whole job again.
      const counted = ha.map((flag) =>
        flag === "high-availability.type=etcd" ? `high-availability.type=${COUNTING_HA}` : flag,
      );
      const run = runNumbers(counted, usrlib, "600000", "5");
      await waitFor(() => /is RUNNING/.test(run.output()), {
        what: "the job running",
        timeoutMs: 30_000,
      });
      expect(run.output()).toContain(`submitted to http://${first.rest};`);
      first.child.kill("SIGKILL");

      expect(await run.exited, `${run.output()}\n---\n${second.output()}`).toBe(0);
      // One leader retrieval for the whole run, across the takeover: opened once, never again.
      expect(count(run.output(), SERVICES_OPENED), run.output()).toBe(1);
      expect(count(run.output(), RETRIEVAL_STARTED), run.output()).toBe(1);
      expect(run.output()).toMatch(/following the leader that high availability names/);
      expect(run.output()).toContain(
        `the leading job manager's REST endpoint is http://${second.rest} now`,
      );
      expect(run.output()).toMatch(/job [0-9a-f]{32} FINISHED after \d+ restart\(s\)/);
      const jobId = /job ([0-9a-f]{32})/.exec(run.output())?.[1] as string;
      expect(second.output()).toMatch(/^elected leader/m);

      const listed = sluice("list", ...ha);
      expect(await listed.exited, listed.output()).toBe(0);
      expect(listed.output()).toMatch(new RegExp(`${jobId}\\s+FINISHED`));
    }, 120_000);

    it("answers INITIALIZING for a job the next leader takes over until it runs: GET /jobs/:id, /jobs/overview and sluice list show it with its name and when the takeover began", async () => {
      const { flags: ha, usrlib, first, second, taskManagers } = await haSessionCluster("tcp");
      const detached = runNumbers(["-d", ...ha], usrlib, "100000000", "5");
      expect(await detached.exited, detached.output()).toBe(0);
      const jobId = /job ([0-9a-f]{32})/.exec(detached.output())?.[1] as string;
      /** `GET route` of the REST endpoint at `rest`: its status and body. */
      const get = async <T = JobDetailsInfo>(rest: string, route: string) => {
        const response = await fetch(`http://${rest}${route}`);
        return { status: response.status, body: (await response.json()) as T };
      };
      await waitFor(
        async () => (await get(first.rest, `/jobs/${jobId}`)).body.state === "RUNNING",
        {
          what: "the job running on the first leader",
          timeoutMs: 30_000,
        },
      );

      // The leader dies with the job's task managers: the next one takes the job over and waits
      // for as many task managers as it ran on.
      const killedAt = Date.now();
      for (const killed of [first, ...taskManagers]) killed.child.kill("SIGKILL");
      await waitFor(() => /^elected leader/m.test(second.output()), {
        what: "the second job manager to lead",
        timeoutMs: 30_000,
      });
      // Until it listed the jobs it takes over, it answers 503 (ask again), never 404.
      let answer = await get(second.rest, `/jobs/${jobId}`);
      await waitFor(
        async () => {
          answer = await get(second.rest, `/jobs/${jobId}`);
          return answer.status !== 503;
        },
        { what: "the new leader to list the jobs it takes over", timeoutMs: 30_000 },
      );
      expect(answer.status, `${JSON.stringify(answer.body)}\n${second.output()}`).toBe(200);
      const initializing = answer.body;
      expect(initializing.state).toBe("INITIALIZING");
      expect(initializing.name).toBe("numbers 100000000");
      expect(initializing["start-time"]).toBeGreaterThanOrEqual(killedAt);
      expect(initializing.timestamps.INITIALIZING).toBe(initializing["start-time"]);
      const { jobs } = (await get<{ jobs: JobOverviewInfo[] }>(second.rest, "/jobs/overview")).body;
      expect(jobs.map((job) => [job.jid, job.state, job.name])).toEqual([
        [jobId, "INITIALIZING", "numbers 100000000"],
      ]);
      const listed = sluice("list", ...ha);
      expect(await listed.exited, listed.output()).toBe(0);
      expect(listed.output()).toMatch(new RegExp(`${jobId}\\s+INITIALIZING`));

      // Task managers come back: the job runs, the same entry since its takeover began.
      for (let i = 0; i < 2; i++) sluice("taskmanager", ...ha, "--usrlib", usrlib);
      await waitFor(
        async () => (await get(second.rest, `/jobs/${jobId}`)).body.state === "RUNNING",
        { what: "the job running on the second leader", timeoutMs: 30_000 },
      );
      const running = (await get(second.rest, `/jobs/${jobId}`)).body;
      expect(running["start-time"]).toBe(initializing["start-time"]);
      expect(running.timestamps.INITIALIZING).toBe(initializing["start-time"]);
      const cancel = sluice("cancel", ...ha, jobId);
      expect(await cancel.exited, cancel.output()).toBe(0);
    }, 120_000);

    it("runs a batch job on the remote shuffle whose worker follows the leader's shuffle manager: after kill -9 of the leader the worker registers with the next one, which re-runs the job exactly and releases the first leader's partitions", async () => {
      const { flags: common, usrlib, first, second } = await haSessionCluster("remote");
      const workerDisk = mkdtempSync(path.join(tmpdir(), "sluice-shuffle-worker-"));
      folders.push(workerDisk);
      // No process is told where a shuffle manager is: the worker learns it from etcd.
      const worker = sluice("shuffleworker", ...common, "-D", `io.tmp.dirs=${workerDisk}`);
      await waitFor(() => worker.output().includes(`shuffle manager at ${first.manager}`), {
        what: "the worker to register with the leader's shuffle manager",
        timeoutMs: 30_000,
      });

      // Paced: the producers push for at least 1 s, and the kill comes at their first files.
      const run = runNumbers(common, usrlib, "400000", "5", "blocking");
      await waitFor(() => /is RUNNING/.test(run.output()) && filesUnder(workerDisk) > 0, {
        what: "the producers pushing to the worker",
        timeoutMs: 30_000,
      });
      first.child.kill("SIGKILL");

      expect(
        await run.exited,
        `${run.output()}\n---\n${second.output()}\n---\n${worker.output()}`,
      ).toBe(0);
      // The kill came while the job ran: sluice run lost it at the first leader.
      expect(run.output()).toMatch(/following the leader that high availability names/);
      expect(run.output()).toMatch(/job [0-9a-f]{32} FINISHED after \d+ restart\(s\)/);
      expect(worker.output()).toContain(`shuffle manager at ${second.manager}`);
      // The first leader's partitions are orphans the second one does not know: released, as
      // are the finished job's own.
      await waitFor(() => filesUnder(workerDisk) === 0, {
        what: "the worker's partition files to be deleted",
        timeoutMs: 30_000,
      });
      expect(worker.child.exitCode).toBeNull();
    }, 120_000);

    it("reaches an etcd that requires TLS client certificates from the -D keys alone: sluice jobmanager leads, a sluice taskmanager and a sluice shuffleworker follow it, and sluice run finds its REST endpoint", async () => {
      const pki = createTestPki("etcd");
      folders.push(pki.dir);
      const server = pki.issue("etcd");
      const client = pki.issue("sluice");
      etcd = await startEtcd({ tls: { cert: server.cert, key: server.key, ca: pki.caCert } });
      expect(etcd.endpoint).toMatch(/^https:/);
      const workerDisk = mkdtempSync(path.join(tmpdir(), "sluice-shuffle-worker-"));
      folders.push(workerDisk);
      const { flags, usrlib } = haFlags(etcd, "remote", [
        ["high-availability.etcd.ssl.ca", pki.caCert],
        ["high-availability.etcd.ssl.cert", client.cert],
        ["high-availability.etcd.ssl.key", client.key],
      ]);
      const jobManager = await startJobManager(flags, "remote");
      await waitFor(() => jobManager.output().includes("elected leader"), {
        what: "the job manager to lead",
        timeoutMs: 30_000,
      });
      const worker = sluice("shuffleworker", ...flags, "-D", `io.tmp.dirs=${workerDisk}`);
      sluice("taskmanager", ...flags, "-D", "taskmanager.numberOfTaskSlots=2", "--usrlib", usrlib);
      await waitFor(
        () =>
          / registered$/m.test(jobManager.output()) &&
          worker.output().includes(`shuffle manager at ${jobManager.manager}`),
        { what: "the task manager and the shuffle worker to follow the leader", timeoutMs: 30_000 },
      );
      const run = runNumbers(flags, usrlib, "100000", "0", "blocking");
      expect(await run.exited, `${run.output()}\n---\n${jobManager.output()}`).toBe(0);
      expect(run.output()).toContain(`submitted to http://${jobManager.rest};`);
      expect(run.output()).toMatch(/job [0-9a-f]{32} FINISHED/);
    }, 120_000);
  },
);
