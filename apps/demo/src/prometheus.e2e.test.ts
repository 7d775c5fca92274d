/**
 * The demo with the bundled Prometheus reporter: every process (the job manager and each task
 * manager) serves its metrics on the first free port of one configured range, under Flink's
 * names and labels, and a scrape during the run sees the job's counters move.
 */
import { createServer } from "node:net";
import { waitFor } from "@sluice/core/testing";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildDemoIfStale, killDemoProcesses, startDemo } from "./test-support/demo-process.js";

beforeAll(buildDemoIfStale, 300_000);
afterEach(killDemoProcesses);

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

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.headers.get("content-type")).toContain("text/plain");
  return response.text();
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

    const jobManager = await scrape(urls.get("job manager") as string);
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
});
