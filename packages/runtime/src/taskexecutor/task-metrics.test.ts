import type { Metric } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../clock/test-support/manual-clock.js";
import { PollStatus } from "../io/record-reader.js";
import { JobGraph } from "../jobmaster/job-graph.js";
import { addSource } from "../jobmaster/test-support/source-vertex.js";
import { TaskManagerMetricGroup } from "../metrics/groups/task-manager-metric-group.js";
import { MetricRegistry } from "../metrics/metric-registry.js";
import { RecordingReporter } from "../metrics/test-support/recording-reporter.js";
import type { TimerGauge } from "../metrics/timer-gauge.js";
import type { Task } from "./task.js";
import type { TaskExecutor } from "./task-executor.js";
import { LocalCluster, localConfiguration } from "./test-support/local-cluster.js";
import type { TaskInvokable } from "./user-code-registry.js";

const cluster = new LocalCluster();
const registries: MetricRegistry[] = [];
afterEach(async () => {
  await cluster.close();
  for (const registry of registries.splice(0)) await registry.close();
});

/** A test's gate: the test opens it when the task may go on. */
function latch(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Waits for `gate`, or until the task is canceled (so a failed test does not leave it hanging). */
function waitFor(gate: { readonly opened: Promise<void> }, task: Task): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(task.signal.reason);
    if (task.signal.aborted) onAbort();
    task.signal.addEventListener("abort", onAbort, { once: true });
    void gate.opened.then(() => {
      task.signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}

/** Emits `count` int32 records through writer 0, waiting whenever the partition is full. */
async function emitInts(task: Task, count: number): Promise<void> {
  const writer = task.writer<number>();
  for (let i = 0; i < count; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(i);
  }
}

/** Reads reader 0 to the end with the async iterator; returns the number of records. */
async function drain(task: Task): Promise<number> {
  let n = 0;
  for await (const _ of task.reader<number>()) n++;
  return n;
}

/** Reads reader 0 to the end with pollRecords, waiting for input as a task's loop does. */
async function drainPolling(task: Task): Promise<number> {
  const reader = task.reader<number>();
  let n = 0;
  for (;;) {
    const status = reader.pollRecords(() => n++, 256);
    if (status === PollStatus.END_OF_INPUT) return n;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
  }
}

interface Setup {
  readonly executor: TaskExecutor;
  readonly reporter: RecordingReporter;
  readonly clock: ManualClock;
}

/** An executor whose metrics go to a recording reporter, on a clock the test moves. */
async function startExecutor(invokables: Record<string, TaskInvokable<Task>>): Promise<Setup> {
  const clock = new ManualClock();
  const reporter = new RecordingReporter();
  const registry = new MetricRegistry({
    reporters: [{ name: "rec", reporter, intervalMs: 0 }],
    clock,
    updateViewsAutomatically: false,
  });
  registries.push(registry);
  const config = localConfiguration();
  const executor = await cluster.startExecutor(config, {
    invokables,
    metricGroup: new TaskManagerMetricGroup(registry, "127.0.0.1", "tm-under-test"),
  });
  return { executor, reporter, clock };
}

/** The metric `name` of every subtask of `taskName` the reporter was told about, by subtask. */
function metricsOf(reporter: RecordingReporter, taskName: string, name: string): Metric[] {
  return reporter.added
    .filter((r) => r.name === name && r.group.getAllVariables()["<task_name>"] === taskName)
    .sort(
      (a, b) =>
        Number(a.group.getAllVariables()["<subtask_index>"]) -
        Number(b.group.getAllVariables()["<subtask_index>"]),
    )
    .map((r) => r.metric);
}

function readMetric(metric: Metric | undefined): number {
  if (metric === undefined) throw new Error("metric not registered");
  if (metric.metricType === "counter") return metric.getCount();
  if (metric.metricType === "gauge") return metric.getValue();
  return metric.getRate();
}

async function pollUntil(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function pipeline(sourceParallelism: number, sinkParallelism: number, records: number): JobGraph {
  const graph = new JobGraph("metrics job");
  const source = addSource(graph, { parallelism: sourceParallelism, configuration: { records } });
  const sink = graph.addVertex({ name: "Sink", parallelism: sinkParallelism, invokable: "sink" });
  graph.connect(source, sink, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
  });
  return graph;
}

describe("a task's metrics against a known workload", () => {
  it("counts the records and bytes every subtask writes and reads, under Flink's names", async () => {
    const { executor, reporter } = await startExecutor({
      source: (task) => emitInts(task, task.configuration.records as number),
      sink: drainPolling,
    });
    const deployer = await cluster.startDeployer();
    const execution = await deployer.deploy(pipeline(2, 3, 1_000), () => executor);
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(metricsOf(reporter, "Source", "numRecordsOut").map(readMetric)).toEqual([1_000, 1_000]);
    expect(metricsOf(reporter, "Source", "numRecordsIn").map(readMetric)).toEqual([0, 0]);
    const readPerSink = metricsOf(reporter, "Sink", "numRecordsIn").map(readMetric);
    expect(readPerSink).toEqual(result.results.get("Sink"));
    expect(readPerSink.reduce((a, b) => a + b, 0)).toBe(2_000);
    // An int32 record is 4 bytes plus its 4-byte length.
    expect(metricsOf(reporter, "Source", "numBytesOut").map(readMetric)).toEqual([8_000, 8_000]);
    expect(metricsOf(reporter, "Source", "numRecordsOutPerSecond")[0]?.metricType).toBe("meter");
    expect(metricsOf(reporter, "Sink", "numBytesInPerSecond")[0]?.metricType).toBe("meter");
    // The tasks ended: their metrics left the reporter.
    expect(reporter.live().filter((id) => id.includes(".metrics job."))).toEqual([]);
  });

  it("measures the time a task waits for input as idle time", async () => {
    const producerMayStart = latch();
    const { executor, reporter, clock } = await startExecutor({
      source: async (task) => {
        await waitFor(producerMayStart, task);
        await emitInts(task, task.configuration.records as number);
      },
      sink: drain,
    });
    const deployer = await cluster.startDeployer();
    const execution = await deployer.deploy(pipeline(1, 1, 10), () => executor);
    await pollUntil(
      () => (metricsOf(reporter, "Sink", "idleTimeMsPerSecond")[0] as TimerGauge)?.isMeasuring(),
      "the sink waits for input",
    );
    clock.advanceMillis(300);
    producerMayStart.open();
    expect((await execution.terminated).status).toBe("FINISHED");
    expect(readMetric(metricsOf(reporter, "Sink", "accumulatedIdleTime")[0])).toBe(300);
    expect(readMetric(metricsOf(reporter, "Sink", "accumulatedBackPressuredTime")[0])).toBe(0);
    // The producer waited for the test, not for input or output: that is busy time.
    expect(readMetric(metricsOf(reporter, "Source", "accumulatedIdleTime")[0])).toBe(0);
    expect(readMetric(metricsOf(reporter, "Source", "accumulatedBusyTime")[0])).toBe(300);
    const idle = metricsOf(reporter, "Sink", "idleTimeMsPerSecond")[0] as TimerGauge;
    clock.advanceMillis(4_700);
    idle.update();
    expect(idle.getValue()).toBe(60);
  });

  it("measures the time a task waits for its output to accept data as back-pressured time", async () => {
    const consumerMayRead = latch();
    const { executor, reporter, clock } = await startExecutor({
      // 5 MB of records do not fit into the worker's 4 MB of network memory.
      source: (task) => emitInts(task, 640_000),
      sink: async (task) => {
        await waitFor(consumerMayRead, task);
        return drainPolling(task);
      },
    });
    const deployer = await cluster.startDeployer();
    const execution = await deployer.deploy(pipeline(1, 1, 0), () => executor);
    // Soft while it waits to emit, hard while an emitted record waits for buffers.
    const measuring = (name: string) =>
      (metricsOf(reporter, "Source", name)[0] as TimerGauge | undefined)?.isMeasuring() === true;
    await pollUntil(
      () =>
        measuring("softBackPressuredTimeMsPerSecond") ||
        measuring("hardBackPressuredTimeMsPerSecond"),
      "the source is back-pressured",
    );
    expect(readMetric(metricsOf(reporter, "Source", "isBackPressured")[0])).toBe(1);
    clock.advanceMillis(200);
    consumerMayRead.open();
    expect((await execution.terminated).status).toBe("FINISHED");
    expect(readMetric(metricsOf(reporter, "Source", "accumulatedBackPressuredTime")[0])).toBe(200);
    expect(readMetric(metricsOf(reporter, "Source", "accumulatedIdleTime")[0])).toBe(0);
    expect(readMetric(metricsOf(reporter, "Sink", "numRecordsIn")[0])).toBe(640_000);
  });
});

/** The value of the first sample of `name` whose labels contain `label`, or undefined. */
function sample(text: string, name: string, label: string): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name}{`) && line.includes(label)) {
      return Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return undefined;
}

describe("the Prometheus endpoint of a worker and of the coordinator", () => {
  it("serves a running job's metrics under Flink's names and labels, and the values move", async () => {
    let stop = false;
    const config = localConfiguration({ "metrics.reporter.prom.port": "0" });
    const executor = await cluster.startExecutor(config, {
      invokables: {
        // Paced so the job runs until the test stops it, without filling the network memory.
        source: async (task) => {
          const writer = task.writer<number>();
          let i = 0;
          while (!stop) {
            for (let k = 0; k < 100; k++) {
              if (!writer.isAvailable()) await writer.getAvailableFuture();
              writer.emit(i++);
            }
            await new Promise((resolve) => setTimeout(resolve, 2));
          }
        },
        sink: drain,
      },
    });
    const deployer = await cluster.startDeployer(config);
    const endpoint = (reporterOwner: { metricGroup: { registry: MetricRegistry } }) => {
      const reporter = reporterOwner.metricGroup.registry.getReporter("prom") as unknown as {
        url: string;
      };
      return reporter.url;
    };
    const workerUrl = endpoint(executor);
    const coordinatorUrl = endpoint(deployer);
    expect(new URL(workerUrl).hostname).toBe("127.0.0.1");
    const execution = await deployer.deploy(pipeline(1, 1, 0), () => executor);
    const scrape = async (url: string) => {
      const response = await fetch(url);
      expect(response.status).toBe(200);
      return response.text();
    };
    const source = 'task_name="Source"';
    const out = "flink_taskmanager_job_task_numRecordsOut";
    let first: number | undefined;
    await pollUntilAsync(async () => {
      first = sample(await scrape(workerUrl), out, source);
      return first !== undefined && first > 0;
    }, "the source's numRecordsOut is exported");
    let text = "";
    await pollUntilAsync(async () => {
      text = await scrape(workerUrl);
      return (sample(text, out, source) ?? 0) > (first ?? 0);
    }, "numRecordsOut grows");
    const line = text.split("\n").find((l) => l.startsWith(`${out}{`) && l.includes(source));
    for (const label of [
      /host="127_0_0_1"/,
      /tm_id="[0-9a-f]{32}"/,
      /job_id="[0-9a-f]{32}"/,
      /job_name="metrics_job"/,
      /task_id="[0-9a-f]{32}"/,
      /task_attempt_id="[0-9a-f_]+"/,
      /subtask_index="0"/,
      /task_attempt_num="0"/,
    ]) {
      expect(line).toMatch(label);
    }
    for (const name of [
      "flink_taskmanager_job_task_numBytesOut",
      "flink_taskmanager_job_task_busyTimeMsPerSecond",
      "flink_taskmanager_job_task_Shuffle_Netty_Output_Buffers_outPoolUsage",
    ]) {
      expect(sample(text, name, source), name).toBeDefined();
    }
    expect(
      sample(text, "flink_taskmanager_job_task_numRecordsIn", 'task_name="Sink"'),
    ).toBeGreaterThan(0);
    expect(
      sample(text, "flink_taskmanager_Status_Shuffle_Netty_TotalMemorySegments", "tm_id"),
    ).toBe(1024);
    expect(sample(await scrape(coordinatorUrl), "flink_jobmanager_numRunningJobs", "host")).toBe(1);
    // Meters move once the view updater has run (every 5 s, as in Flink).
    await pollUntilAsync(
      async () => (sample(await scrape(workerUrl), `${out}PerSecond`, source) ?? 0) > 0,
      "numRecordsOutPerSecond is above 0",
    );
    // Over 5 s have passed since the job was deployed.
    const uptime = sample(
      await scrape(coordinatorUrl),
      "flink_jobmanager_job_uptime",
      "metrics_job",
    );
    expect(uptime).toBeGreaterThan(0);
    stop = true;
    expect((await execution.terminated).status).toBe("FINISHED");
    text = await scrape(workerUrl);
    // The job's tasks ended: their series are gone, the worker's own remain.
    expect(text).not.toContain("flink_taskmanager_job_task_");
    expect(text).toContain("flink_taskmanager_Status_Shuffle_Netty_UsedMemorySegments");
    expect(sample(await scrape(coordinatorUrl), "flink_jobmanager_numRunningJobs", "host")).toBe(0);
  }, 30_000);
});

async function pollUntilAsync(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    // A scrape per 20 ms is plenty; polling faster would only load the machine.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
