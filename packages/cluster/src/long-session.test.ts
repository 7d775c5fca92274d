/**
 * A session cluster that runs job after job: a job manager and two task managers, each in a
 * process of its own (test-support/session-*.mjs, the compiled packages), run streaming
 * (checkpointed, pipelined) and batch (blocking) jobs in turn. After every job each process
 * reports, right after a full garbage collection, its heap, open file descriptors, active
 * resources, and which objects of the finished jobs it can still reach (held weakly). Nothing of
 * a finished job may stay reachable, and after a warm-up the heap, the descriptors and the
 * resources stay flat.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "@sluice/core/testing";
import { afterEach, expect, it } from "vitest";

const SUPPORT = path.join(path.dirname(fileURLToPath(import.meta.url)), "test-support");
const PACKAGE_DIR = path.resolve(SUPPORT, "../..");

/** Jobs in the session; the first ones warm the processes up (lazy compilation, pools, caches). */
const JOBS = 50;
const WARM_UP = 20;
/** Jobs per window whose medians are compared: robust to one sample that a GC timing skews. */
const WINDOW = 10;
/**
 * The most the heap may grow per job between the windows. A JobExecution with its graph and
 * coordinator kept per job costs about 20 KB on the job manager, a task's gates and pools about
 * 15 KB on a task manager; what is left after the fixes is bounded caches (a data connection's
 * 64 receiver ids, the last 1024 released partition ids).
 */
const MAX_HEAP_GROWTH_PER_JOB = 6 * 1024;

/**
 * The processes run with `--expose-gc` (the measurements follow a full collection) and without
 * the optimizing compilers: code they compile as functions get hot would grow the heap by a few
 * kilobytes per job for a long while, which is no leak but would hide one of that size.
 */
const NODE_FLAGS = ["--expose-gc", "--no-opt", "--no-maglev", "--no-sparkplug"];

interface Footprint {
  readonly heapUsed: number;
  readonly fds: number;
  readonly handles: number;
  readonly reachable: Readonly<Record<string, number>>;
}

interface JobFootprint {
  readonly index: number;
  readonly status: string;
  readonly checkpoints: number;
  readonly jobManager: Footprint;
  readonly taskManagers: readonly Footprint[];
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});

/** Starts `script` of test-support with `args`; collects what it prints. */
function start(script: string, args: readonly string[]) {
  const child = spawn(process.execPath, [...NODE_FLAGS, path.join(SUPPORT, script), ...args], {
    cwd: PACKAGE_DIR,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const output = { stdout: "", stderr: "" };
  child.stdout?.on("data", (chunk: Buffer) => {
    output.stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output.stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { output, exited };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

it("keeps nothing of finished jobs: heap, file descriptors and active resources stay flat", async () => {
  const jobManager = start("session-job-manager.mjs", [String(JOBS)]);
  let port = 0;
  await waitFor(
    () => {
      port = Number(/^listening (\d+)$/m.exec(jobManager.output.stdout)?.[1] ?? 0);
      return port > 0;
    },
    { timeoutMs: 60_000, what: `the job manager to listen\n${jobManager.output.stderr}` },
  );
  const taskManagers = [0, 1].map(() =>
    start("session-task-manager.mjs", ["127.0.0.1", String(port)]),
  );
  const code = await jobManager.exited;
  expect(code, jobManager.output.stderr).toBe(0);
  for (const taskManager of taskManagers) {
    expect(await taskManager.exited, taskManager.output.stderr).toBe(0);
  }

  const jobs: JobFootprint[] = jobManager.output.stdout
    .split("\n")
    .filter((line) => line.startsWith("footprint "))
    .map((line) => JSON.parse(line.slice("footprint ".length)) as JobFootprint);
  expect(jobs).toHaveLength(JOBS);
  expect(jobs.every((job) => job.status === "FINISHED")).toBe(true);
  // The streaming jobs took checkpoints: their coordinators had something to keep.
  expect(jobs.reduce((sum, job) => sum + job.checkpoints, 0)).toBeGreaterThan(0);

  const processes: Record<string, (job: JobFootprint) => Footprint> = {
    "job manager": (job) => job.jobManager,
    "task manager 0": (job) => job.taskManagers[0] as Footprint,
    "task manager 1": (job) => job.taskManagers[1] as Footprint,
  };
  const early = jobs.slice(WARM_UP, WARM_UP + WINDOW);
  const late = jobs.slice(-WINDOW);
  const span = JOBS - WINDOW - WARM_UP;
  const measured = Object.entries(processes).map(([name, of]) => {
    const at = (window: readonly JobFootprint[], key: "heapUsed" | "fds" | "handles") =>
      median(window.map((job) => of(job)[key]));
    return {
      name,
      of,
      heap: [at(early, "heapUsed"), at(late, "heapUsed")] as const,
      fds: [at(early, "fds"), at(late, "fds")] as const,
      handles: [at(early, "handles"), at(late, "handles")] as const,
    };
  });
  const perJob = ([before, after]: readonly [number, number]) => (after - before) / span;
  console.log(
    `long session, jobs ${WARM_UP}-${WARM_UP + WINDOW - 1} vs ${JOBS - WINDOW}-${JOBS - 1} (medians):\n  ${measured
      .map(
        ({ name, heap, fds, handles }) =>
          `${name}: heap ${heap[0]} -> ${heap[1]} bytes (${Math.round(perJob(heap))} per job), fds ${fds[0]} -> ${fds[1]}, active resources ${handles[0]} -> ${handles[1]}`,
      )
      .join("\n  ")}`,
  );
  for (const { name, of, heap, fds, handles } of measured) {
    // After every job, not only after the warm-up: nothing of it may be left.
    for (const job of jobs) {
      expect(of(job).reachable, `${name} after job ${job.index}`).toEqual({});
    }
    expect(perJob(heap), `${name}: heap growth per job`).toBeLessThan(MAX_HEAP_GROWTH_PER_JOB);
    expect(fds[1], `${name}: open file descriptors`).toBeLessThanOrEqual(fds[0]);
    expect(handles[1], `${name}: active resources`).toBeLessThanOrEqual(handles[0]);
  }
}, 300_000);
