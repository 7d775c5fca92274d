/**
 * The demo with the bundled Prometheus reporter: every process (the job manager and each task
 * manager) serves its metrics on the first free port of one configured range, under Flink's
 * names and labels, and a scrape during the run sees the job's counters move.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import {
  type DemoProcess,
  REPO,
  startDemo,
  useDemoProcesses,
} from "./test-support/demo-process.js";
import { THROTTLE_MESSAGE } from "./word-count-job.js";

useDemoProcesses();

const RANGE_SIZE = 8;

/** True if `port` can be listened on right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A range of ports that are free now, away from the well-known ones other runs may use. */
async function freePortRange(): Promise<{ from: number; to: number }> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const from = 20_000 + Math.floor(Math.random() * 30_000);
    const ports = Array.from({ length: RANGE_SIZE }, (_, i) => from + i);
    if ((await Promise.all(ports.map(isFree))).every(Boolean)) {
      return { from, to: from + RANGE_SIZE - 1 };
    }
  }
  throw new Error(`no ${RANGE_SIZE} consecutive free ports found`);
}

/** The sum of a metric's samples whose labels contain every one of `labels`. */
function sumOf(exposition: string, name: string, labels: readonly string[]): number {
  let sum = 0;
  for (const line of exposition.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!labels.every((label) => line.includes(label))) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

/**
 * Every metric docs/metrics.md lists, as a pattern of its Prometheus name: `flink_` + the logical
 * scope of its table's heading + its name, `.` as `_` (the reporter's naming), `<n>` any index.
 */
function documentedMetrics(): Map<string, RegExp> {
  const doc = readFileSync(path.join(REPO, "docs/metrics.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Every metric"), doc.indexOf("## Reporters"));
  const names = new Map<string, RegExp>();
  let scope: string | undefined;
  for (const line of section.split("\n")) {
    const heading = /^### .*\(`([a-z.]+)`\)$/.exec(line);
    if (heading !== null) scope = heading[1];
    const row = /^\| `([A-Za-z.<>]+)` \|/.exec(line);
    if (row === null) continue;
    if (scope === undefined) throw new Error(`metric ${row[1]} outside a scoped table`);
    const name = `flink_${scope}.${row[1]}`.replaceAll(".", "_");
    names.set(name, new RegExp(`^${name.replaceAll("<n>", "\\d+")}$`));
  }
  return names;
}

/** The metric names of an exposition (its `# TYPE` lines). */
function exportedMetrics(exposition: string): Set<string> {
  return new Set([...exposition.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] as string));
}

/** The values of a metric's samples whose labels contain every one of `labels`. */
function valuesOf(exposition: string, name: string, labels: readonly string[] = []): number[] {
  const values: number[] = [];
  for (const line of exposition.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!labels.every((label) => line.includes(label))) continue;
    values.push(Number(line.slice(line.lastIndexOf(" ") + 1)));
  }
  return values;
}

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.headers.get("content-type")).toContain("text/plain");
  return response.text();
}

/**
 * Lifts the counters' throttle with the demo's job message (through its REST endpoint), once a
 * test saw what it throttled the job for: the rest of the run goes at full speed instead of
 * waiting out the throttle, and is verified as before. Nothing to lift once the job ended.
 */
async function liftThrottle(demo: DemoProcess): Promise<void> {
  const { stdout } = demo.output();
  const dashboard = /^dashboard: (http:\/\/\S+?)\/?$/m.exec(stdout)?.[1];
  expect(dashboard, stdout).toBeDefined();
  const { jobs } = (await (await fetch(`${dashboard}/jobs`)).json()) as {
    jobs: { id: string; status: string }[];
  };
  const running = jobs.find((job) => job.status === "RUNNING");
  if (running === undefined) return;
  const response = await fetch(`${dashboard}/jobs/${running.id}/messages/${THROTTLE_MESSAGE}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ recordsPerSecond: null }),
  });
  // 409: the job ended meanwhile.
  expect([200, 409], await response.text()).toContain(response.status);
}

/** Starts the demo with the Prometheus reporter on a free range; resolves its three endpoints. */
async function startWithEndpoints(args: readonly string[], taskManagers = 2) {
  const range = await freePortRange();
  const demo = startDemo([
    ...args,
    "--task-managers",
    String(taskManagers),
    "-D",
    `metrics.reporter.prom.port=${range.from}-${range.to}`,
    "-D",
    "rest.port=0",
  ]);
  const endpoints = () => [
    ...demo.output().stdout.matchAll(/^(job manager|task manager \d) .*metrics \(prom\): (\S+)$/gm),
  ];
  await waitFor(() => endpoints().length === 1 + taskManagers, {
    what: "the processes to print their metrics endpoints",
    timeoutMs: 20_000,
    intervalMs: 50,
  });
  const urls = new Map(endpoints().map((match) => [match[1] as string, match[2] as string]));
  return { demo, urls };
}

describe("the demo's Prometheus endpoints", () => {
  it("serve Flink's metric names and labels on one port range for every process, and the values move during the run", async () => {
    const range = await freePortRange();
    const demo = startDemo([
      "--records",
      "1m",
      "--duration",
      "5",
      "-D",
      `metrics.reporter.prom.port=${range.from}-${range.to}`,
      "-D",
      "rest.port=0",
    ]);
    const endpoints = () => [
      ...demo
        .output()
        .stdout.matchAll(/^(job manager|task manager \d) .*metrics \(prom\): (\S+)$/gm),
    ];
    await waitFor(() => endpoints().length === 3, {
      what: "the three processes to print their metrics endpoints",
      timeoutMs: 20_000,
      intervalMs: 50,
    });
    const urls = new Map(endpoints().map((match) => [match[1] as string, match[2] as string]));
    const ports = [...urls.values()].map((url) => Number(new URL(url).port));
    expect(new Set(ports).size).toBe(3);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(range.from);
      expect(port).toBeLessThanOrEqual(range.to);
    }

    // The endpoints are printed as the processes start, before the demo submits its job: the job
    // manager's gauge counts the job once it was submitted.
    let jobManager = "";
    await waitFor(
      async () => {
        jobManager = await scrape(urls.get("job manager") as string);
        return /^flink_jobmanager_numRunningJobs\{host="[^"]+"\} 1$/m.test(jobManager);
      },
      { what: "the job manager to count the running job", timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(jobManager).toMatch(/^flink_jobmanager_numRunningJobs\{host="[^"]+"\} 1$/m);

    const taskManagers = [urls.get("task manager 0"), urls.get("task manager 1")] as string[];
    const counted = async () => {
      const scrapes = await Promise.all(taskManagers.map(scrape));
      return scrapes.reduce(
        (sum, text) =>
          sum +
          sumOf(text, "flink_taskmanager_job_task_numRecordsIn", [
            'job_name="word_count"',
            'task_name="Count"',
          ]),
        0,
      );
    };
    let first = 0;
    await waitFor(
      async () => {
        first = await counted();
        return first > 0;
      },
      {
        what: "the counters to count",
        timeoutMs: 10_000,
        intervalMs: 100,
      },
    );
    await waitFor(async () => (await counted()) > first, {
      what: "the counters' numRecordsIn to grow between two scrapes",
      timeoutMs: 10_000,
      intervalMs: 100,
    });

    const text = await scrape(taskManagers[0] as string);
    expect(text).toMatch(
      /^flink_taskmanager_job_task_numRecordsOut\{host="127_0_0_1",tm_id="\w+",job_id="\w+",job_name="word_count",task_id="\w+",task_attempt_id="\w+",task_name="Source:_Words____Tokenize",subtask_index="0",task_attempt_num="0"\} \d+$/m,
    );
    for (const name of [
      "flink_taskmanager_job_task_numRecordsInPerSecond",
      "flink_taskmanager_job_task_numBytesOutPerSecond",
      "flink_taskmanager_job_task_backPressuredTimeMsPerSecond",
      "flink_taskmanager_job_task_idleTimeMsPerSecond",
      "flink_taskmanager_job_task_busyTimeMsPerSecond",
      "flink_taskmanager_job_task_Shuffle_Netty_Output_Buffers_outPoolUsage",
      "flink_taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage",
      "flink_taskmanager_Status_Shuffle_Netty_TotalMemorySegments",
    ]) {
      expect(text, name).toContain(`\n${name}{`);
    }

    const run = await demo.done;
    expect(run.stdout).toContain("verified");
    expect(run.code).toBe(0);
  }, 40_000);

  it("export every metric of docs/metrics.md, and none it does not list, with values that move as Flink's do", async () => {
    // Throttled counters back-pressure the sources for about 10 s; checkpoints every 300 ms,
    // unaligned, and debloating on, so every metric has something to measure.
    const { demo, urls } = await startWithEndpoints([
      "--records",
      "400k",
      "--throttle",
      "20000",
      "--checkpoint-interval",
      "300",
      "-D",
      "execution.checkpointing.unaligned.enabled=true",
      "-D",
      "taskmanager.network.memory.buffer-debloat.enabled=true",
      "-D",
      "taskmanager.network.detailed-metrics=true",
    ]);
    const jobManagerUrl = urls.get("job manager") as string;
    const taskManagerUrls = [urls.get("task manager 0"), urls.get("task manager 1")] as string[];
    const scrapeTaskManagers = async () =>
      (await Promise.all(taskManagerUrls.map(scrape))).join("\n");
    const sum = (text: string, name: string, labels: readonly string[] = []) =>
      valuesOf(text, name, labels).reduce((a, b) => a + b, 0);
    const task = "flink_taskmanager_job_task_";
    const counters = ['task_name="Count"'];
    const sources = ['task_name="Source:_Words____Tokenize"'];

    // Wait until the job runs, a checkpoint completed and a meter update saw back-pressure.
    let taskManagers = "";
    let jobManager = "";
    await waitFor(
      async () => {
        [taskManagers, jobManager] = await Promise.all([
          scrapeTaskManagers(),
          scrape(jobManagerUrl),
        ]);
        return (
          sum(jobManager, "flink_jobmanager_job_numberOfCompletedCheckpoints") >= 2 &&
          sum(taskManagers, `${task}softBackPressuredTimeMsPerSecond`, sources) > 0 &&
          valuesOf(taskManagers, `${task}debloatedBufferSize`, counters).some(
            (size) => size < 32 * 1024,
          )
        );
      },
      {
        what: "checkpoints, back-pressure and debloating to show",
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );

    // The doc and the reporter agree, name for name.
    const exported = [...exportedMetrics(taskManagers), ...exportedMetrics(jobManager)];
    const documented = [...documentedMetrics()];
    expect(
      documented
        .filter(([, pattern]) => !exported.some((name) => pattern.test(name)))
        .map(([name]) => name),
      "documented, not exported",
    ).toEqual([]);
    expect(
      exported.filter((name) => !documented.some(([, pattern]) => pattern.test(name))),
      "exported, not documented",
    ).toEqual([]);

    // Over TCP between two task managers each counter reads one source locally and one remotely:
    // both splits grow. (That they add up to numBytesIn the network's unit tests check, where
    // the reads are at one moment: a scrape may read the metrics event-loop turns apart.)
    const local = `${task}Shuffle_Netty_Input_numBytesInLocal`;
    const remote = `${task}Shuffle_Netty_Input_numBytesInRemote`;
    const before = {
      local: sum(taskManagers, local, counters),
      remote: sum(taskManagers, remote, counters),
    };
    await waitFor(
      async () => {
        taskManagers = await scrapeTaskManagers();
        return (
          sum(taskManagers, local, counters) > before.local &&
          sum(taskManagers, remote, counters) > before.remote
        );
      },
      { what: "numBytesInLocal and numBytesInRemote to grow", timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(
      sum(taskManagers, `${task}Shuffle_Netty_Input_numBuffersInRemote`, counters),
    ).toBeGreaterThan(0);
    // Back-pressured sources: their queues hold data, the counters' remote channels too.
    await waitFor(
      async () => {
        taskManagers = await scrapeTaskManagers();
        return (
          sum(taskManagers, `${task}Shuffle_Netty_Output_Buffers_outputQueueSize`, sources) > 0 &&
          sum(taskManagers, `${task}Shuffle_Netty_Input_Buffers_inputQueueSize`, counters) > 0
        );
      },
      { what: "queued bytes on both sides", timeoutMs: 10_000, intervalMs: 100 },
    );
    // The detailed queue lengths: the counters' remote channels hold buffers under back-pressure.
    expect(
      sum(taskManagers, `${task}Shuffle_Netty_Input_0_totalQueueLen`, counters),
    ).toBeGreaterThanOrEqual(
      sum(taskManagers, `${task}Shuffle_Netty_Input_0_maxQueueLen`, counters),
    );
    // Soft plus hard is the back-pressured time, subtask by subtask. The values change every
    // 5 s, between two reads of one scrape at worst: some scrape sees them all at one update.
    const consistent = (text: string) =>
      text
        .split("\n")
        .filter((line) => line.startsWith(`${task}backPressuredTimeMsPerSecond{`))
        .every((line) => {
          const labels = line.slice(line.indexOf("{"), line.lastIndexOf("}") + 1);
          const read = (name: string) => sum(text, `${task}${name}`, [labels]);
          const parts =
            read("softBackPressuredTimeMsPerSecond") + read("hardBackPressuredTimeMsPerSecond");
          return (
            Math.min(1000, parts) === read("backPressuredTimeMsPerSecond") &&
            read("maxSoftBackPressureTimeMs") >= 0 &&
            read("maxHardBackPressureTimeMs") >= 0
          );
        });
    await waitFor(async () => consistent(await scrapeTaskManagers()), {
      what: "soft plus hard back-pressured time to be the back-pressured time",
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    for (const size of valuesOf(taskManagers, `${task}debloatedBufferSize`, counters)) {
      expect(size).toBeGreaterThan(0);
      expect(size).toBeLessThanOrEqual(32 * 1024);
    }
    expect(
      valuesOf(taskManagers, `${task}estimatedTimeToConsumeBuffersMs`, counters).some(
        (ms) => ms > 0,
      ),
    ).toBe(true);
    expect(
      valuesOf(taskManagers, `${task}checkpointStartDelayNanos`, counters).some((ns) => ns > 0),
    ).toBe(true);
    for (const requested of valuesOf(
      taskManagers,
      "flink_taskmanager_Status_Shuffle_Netty_RequestedMemoryUsage",
    )) {
      expect(requested).toBeGreaterThan(0);
    }

    // The job manager's checkpoint statistics follow the completed checkpoints.
    const completed = sum(jobManager, "flink_jobmanager_job_numberOfCompletedCheckpoints");
    await waitFor(
      async () => {
        jobManager = await scrape(jobManagerUrl);
        return sum(jobManager, "flink_jobmanager_job_numberOfCompletedCheckpoints") > completed;
      },
      { what: "another checkpoint to complete", timeoutMs: 15_000, intervalMs: 100 },
    );
    const job = (name: string) => sum(jobManager, `flink_jobmanager_job_${name}`);
    expect(job("totalNumberOfCheckpoints")).toBeGreaterThanOrEqual(
      job("numberOfCompletedCheckpoints") + job("numberOfFailedCheckpoints"),
    );
    expect(job("lastCompletedCheckpointId")).toBeGreaterThanOrEqual(
      job("numberOfCompletedCheckpoints"),
    );
    expect(job("lastCheckpointDuration")).toBeGreaterThanOrEqual(0);
    expect(job("lastCheckpointSize")).toBeGreaterThan(0);
    expect(job("lastCheckpointFullSize")).toBe(job("lastCheckpointSize"));
    expect(job("lastCheckpointPersistedData")).toBeGreaterThanOrEqual(0);
    // No restart: nothing was restored.
    expect(job("lastCheckpointRestoreTimestamp")).toBe(-1);

    await liftThrottle(demo);
    const run = await demo.done;
    expect(run.stdout).toContain("verified");
    expect(run.code).toBe(0);
  }, 90_000);

  it("count every byte as local with one task manager, none as remote", async () => {
    const { demo, urls } = await startWithEndpoints(
      ["--records", "200k", "--throttle", "20000"],
      1,
    );
    const url = urls.get("task manager 0") as string;
    const counters = ['task_name="Count"'];
    const task = "flink_taskmanager_job_task_";
    let text = "";
    let first = 0;
    await waitFor(
      async () => {
        text = await scrape(url);
        first = valuesOf(text, `${task}Shuffle_Netty_Input_numBytesInLocal`, counters).reduce(
          (a, b) => a + b,
          0,
        );
        return first > 0;
      },
      { what: "the counters to read locally", timeoutMs: 20_000, intervalMs: 100 },
    );
    await waitFor(
      async () => {
        text = await scrape(url);
        const now = valuesOf(text, `${task}Shuffle_Netty_Input_numBytesInLocal`, counters);
        return now.reduce((a, b) => a + b, 0) > first;
      },
      { what: "numBytesInLocal to grow", timeoutMs: 10_000, intervalMs: 100 },
    );
    const remote = valuesOf(text, `${task}Shuffle_Netty_Input_numBytesInRemote`, counters);
    expect(remote.length).toBe(2);
    expect(remote).toEqual([0, 0]);
    expect(valuesOf(text, `${task}Shuffle_Netty_Input_Buffers_inputQueueSize`, counters)).toEqual([
      0, 0,
    ]);
    await liftThrottle(demo);
    const run = await demo.done;
    expect(run.code).toBe(0);
  }, 60_000);
});
