/**
 * The demo as a cluster to measure: `apps/demo` started as a child process (a job manager and its
 * task manager processes, the word count deployed all-to-all across them), watched from outside
 * as an operator would — its output for the task managers' registrations and the dashboard's address, the
 * job manager's REST API (`GET /jobs/overview`, Flink's shape) for the
 * subtasks' states, the task managers' Prometheus
 * endpoints for the partition requests retried after PartitionNotFound, and the CPU time of the whole demo
 * (job manager and task managers), which this process is charged with once it reaped the demo
 * (`/proc/self/stat`, the times of waited-for children: the demo waits for its task managers).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The demo's entry point, built with the bench (a dependency of @sluice/bench). */
const DEMO_MAIN = fileURLToPath(new URL("../../../apps/demo/dist/main.js", import.meta.url));

/** Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux whatever the kernel's HZ). */
const USER_HZ = 100;
/** How often the dashboard is asked while the job deploys. */
const DEPLOY_POLL_MS = 20;
/** How often the task managers' metrics are scraped once it runs. */
const SCRAPE_MS = 500;
/** The ports the demo's processes serve their metrics on (each takes the first free one). */
const PROMETHEUS_PORTS = "9400-9499";
/** The task-scope counter of partition requests retried after PartitionNotFound. */
const RETRIES = "flink_taskmanager_job_task_Shuffle_Netty_Input_partitionRequestRetries";

/** What one demo run measured. */
export interface DemoClusterRun {
  /** The demo verified the counts (exit code 0). */
  readonly verified: boolean;
  /** From the last task manager's registration to every subtask RUNNING (or already FINISHED). */
  readonly deployMs: number | undefined;
  /**
   * Partition requests the tasks retried after PartitionNotFound, the most each task manager's
   * tasks reported together in a scrape (finished tasks drop out of the endpoint).
   */
  readonly partitionRequestRetries: number | undefined;
  /** Words counted, and the CPU time (user + system) of all of the demo's processes (ms). */
  readonly records: number;
  readonly cpuMs: number;
  /** The demo's own throughput (words ÷ the job's duration). */
  readonly recordsPerSecond: number | undefined;
  /** Why the run did not verify (stderr's last line, or a timeout). */
  readonly error?: string;
}

/** `GET /jobs/overview` (Flink's MultipleJobsDetails): each job's subtasks by state, and `total`. */
interface JobsOverview {
  readonly jobs: readonly { readonly tasks: Readonly<Record<string, number>> }[];
}

/**
 * CPU time (user + system, ms) of this process's children that were waited for, and of theirs:
 * fields 16 and 17 of `/proc/self/stat`.
 */
function childrenCpuMs(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  // The fields after the command name (in parentheses, which may hold spaces) start at field 3.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / USER_HZ;
}

/** The sum of the samples of `name` in a task manager's exposition, or undefined if unreachable. */
async function scrapeSum(url: string, name: string): Promise<number | undefined> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) return undefined;
    let sum = 0;
    for (const line of (await response.text()).split("\n")) {
      if (line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return sum;
  } catch {
    return undefined;
  }
}

async function getJson<T>(url: URL): Promise<T | undefined> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return response.ok ? ((await response.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

/** True once the job's every subtask is RUNNING or already FINISHED (`GET /jobs/overview`). */
async function deployed(dashboard: string): Promise<boolean> {
  const tasks = (await getJson<JobsOverview>(new URL("jobs/overview", dashboard)))?.jobs[0]?.tasks;
  if (tasks === undefined) return false;
  const total = tasks.total ?? 0;
  return total > 0 && (tasks.running ?? 0) + (tasks.finished ?? 0) === total;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs the demo with `args` (its dashboard on a free port), measures it, and resolves when it
 * exited; a run longer than `timeoutMs` is ended with SIGTERM (the demo then stops its task
 * managers) and reported as not verified.
 */
export async function runDemoCluster(
  args: readonly string[],
  timeoutMs: number,
): Promise<DemoClusterRun> {
  const cpuBefore = childrenCpuMs();
  const child: ChildProcess = spawn(
    process.execPath,
    [
      DEMO_MAIN,
      ...args,
      "--json",
      "-D",
      "rest.port=0",
      "-D",
      `metrics.reporter.prom.port=${PROMETHEUS_PORTS}`,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let lastReadyAt = 0;
  let dashboard: string | undefined;
  const metricsUrls: string[] = [];
  let stdout = "";
  let stderrTail = "";
  // With --json the demo prints its progress lines on stderr (stdout carries the JSON only).
  const lineReader = () => {
    let pending = "";
    return (chunk: string) => {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (/^task manager \d+ \(pid \d+\) ready/.test(line)) lastReadyAt = performance.now();
        const url = /^dashboard: (http\S+)/.exec(line);
        if (url !== null) dashboard = url[1];
        const metrics = /^task manager \d+ \(pid \d+\) metrics \(prom\): (http\S+)/.exec(line);
        if (metrics?.[1] !== undefined) metricsUrls.push(metrics[1]);
      }
    };
  };
  const onStdout = lineReader();
  const onStderr = lineReader();
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    onStdout(chunk);
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-2000);
    onStderr(chunk);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  let running = true;
  void exited.then(() => {
    running = false;
  });
  const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);

  let deployedAt: number | undefined;
  while (running && deployedAt === undefined) {
    await delay(DEPLOY_POLL_MS);
    if (dashboard === undefined) continue;
    if (await deployed(dashboard)) deployedAt = performance.now();
  }
  // Retries happen while the job deploys; scraping until it ends catches the late ones.
  const retriesByTaskManager = new Map<string, number>();
  while (running) {
    const scraped = await Promise.all(metricsUrls.map((url) => scrapeSum(url, RETRIES)));
    scraped.forEach((sum, i) => {
      const url = metricsUrls[i] as string;
      if (sum !== undefined)
        retriesByTaskManager.set(url, Math.max(sum, retriesByTaskManager.get(url) ?? 0));
    });
    await delay(SCRAPE_MS);
  }
  const code = await exited;
  clearTimeout(timer);
  const cpuMs = childrenCpuMs() - cpuBefore;
  const json = stdout
    .trim()
    .split("\n")
    .reverse()
    .find((line) => line.startsWith("{"));
  const summary =
    json === undefined
      ? undefined
      : (JSON.parse(json) as { verified?: boolean; records?: number; recordsPerSecond?: number });
  const verified = code === 0 && summary?.verified === true;
  return {
    verified,
    deployMs: deployedAt === undefined ? undefined : deployedAt - lastReadyAt,
    partitionRequestRetries:
      retriesByTaskManager.size === 0
        ? undefined
        : [...retriesByTaskManager.values()].reduce((a, b) => a + b, 0),
    records: summary?.records ?? 0,
    cpuMs,
    recordsPerSecond: summary?.recordsPerSecond,
    ...(verified
      ? {}
      : {
          error:
            code === null
              ? `the demo did not finish within ${timeoutMs} ms`
              : (stderrTail.trim().split("\n").pop() ?? `exit code ${code}`),
        }),
  };
}
