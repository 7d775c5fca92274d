import { createServer, type Server } from "node:net";
import { ErrorCodes, type SluiceError } from "@sluice/core";
import type { Counter, Gauge, Meter, MetricGroup } from "@sluice/runtime-api";
import { readableConfigOf } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type { PrometheusReporter } from "./prometheus-reporter.js";
import { PrometheusReporterFactory } from "./prometheus-reporter-factory.js";

/** A task group as the runtime builds it under Flink's default scope formats. */
function taskGroup(subtaskIndex: number, jobName = "word count"): MetricGroup {
  const variables = {
    "<host>": "127.0.0.1",
    "<tm_id>": "tm-1",
    "<job_id>": "0123abcd",
    "<job_name>": jobName,
    "<task_id>": "v-1",
    "<task_name>": "Count",
    "<task_attempt_id>": "a-1",
    "<task_attempt_num>": "0",
    "<subtask_index>": String(subtaskIndex),
  };
  const logical = ["taskmanager", "job", "task"];
  return {
    getScopeComponents: () => [
      "127.0.0.1",
      "taskmanager",
      "tm-1",
      jobName,
      "Count",
      String(subtaskIndex),
    ],
    getAllVariables: () => variables,
    getMetricIdentifier: (name, filter = (s) => s, delimiter = ".") =>
      [...logical, name].map(filter).join(delimiter),
    getLogicalScope: (filter = (s) => s, delimiter = ".") => logical.map(filter).join(delimiter),
  };
}

/** A subgroup `Shuffle.Netty.Input.Buffers` of a task group. */
function buffersGroup(task: MetricGroup): MetricGroup {
  return {
    ...task,
    getLogicalScope: (filter = (s) => s, delimiter = ".") =>
      [
        task.getLogicalScope(filter, delimiter),
        ...["Shuffle", "Netty", "Input", "Buffers"].map(filter),
      ].join(delimiter),
  };
}

const counter = (count: () => number): Counter => ({ metricType: "counter", getCount: count });
const gauge = (value: () => number): Gauge => ({ metricType: "gauge", getValue: value });
const meter = (rate: number, count: number): Meter => ({
  metricType: "meter",
  getRate: () => rate,
  getCount: () => count,
});

const reporters: PrometheusReporter[] = [];
const blockers: Server[] = [];

afterEach(async () => {
  for (const reporter of reporters.splice(0)) await reporter.close();
  for (const server of blockers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

function reporterFor(config: Record<string, unknown>, name = "prom"): PrometheusReporter {
  const reporter = new PrometheusReporterFactory().createMetricReporter({
    name,
    configuration: readableConfigOf({
      [`metrics.reporter.${name}.bind-host`]: "127.0.0.1",
      ...config,
    }),
    properties: {},
  });
  reporters.push(reporter);
  return reporter;
}

async function scrape(reporter: PrometheusReporter, path = "/metrics"): Promise<Response> {
  const url = reporter.url;
  if (url === undefined) throw new Error("reporter is not open");
  return fetch(url.replace("/metrics", path));
}

/** Holds a port on 127.0.0.1 so the reporter cannot have it. */
async function takePort(): Promise<number> {
  const server = createServer();
  blockers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("no address");
  return address.port;
}

describe("PrometheusReporter", () => {
  it("names metrics and labels as Flink's PrometheusReporter does and serves them over HTTP", async () => {
    const reporter = reporterFor({ "metrics.reporter.prom.port": 0 });
    await reporter.open();
    let records = 41;
    reporter.notifyOfAddedMetric(
      counter(() => records),
      "numRecordsIn",
      taskGroup(0),
    );
    reporter.notifyOfAddedMetric(meter(12.5, 1_000), "numRecordsInPerSecond", taskGroup(1));
    reporter.notifyOfAddedMetric(
      gauge(() => 0.25),
      "inPoolUsage",
      buffersGroup(taskGroup(0)),
    );
    records = 42;
    const response = await scrape(reporter);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    const text = await response.text();
    const labels = (subtask: number) =>
      `host="127_0_0_1",tm_id="tm_1",job_id="0123abcd",job_name="word_count",task_id="v_1",task_name="Count",task_attempt_id="a_1",task_attempt_num="0",subtask_index="${subtask}"`;
    expect(text).toContain(
      "# HELP flink_taskmanager_job_task_numRecordsIn numRecordsIn (scope: taskmanager_job_task)",
    );
    expect(text).toContain("# TYPE flink_taskmanager_job_task_numRecordsIn gauge");
    expect(text).toContain(`flink_taskmanager_job_task_numRecordsIn{${labels(0)}} 42`);
    expect(text).toContain(`flink_taskmanager_job_task_numRecordsInPerSecond{${labels(1)}} 12.5`);
    expect(text).toContain(
      `flink_taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage{${labels(0)}} 0.25`,
    );
  });

  it("exports every subtask under one name and forgets a subtask's series when its metric is removed", async () => {
    const reporter = reporterFor({ "metrics.reporter.prom.port": 0 });
    await reporter.open();
    const first = counter(() => 1);
    const second = counter(() => 2);
    reporter.notifyOfAddedMetric(first, "numRecordsOut", taskGroup(0));
    reporter.notifyOfAddedMetric(second, "numRecordsOut", taskGroup(1));
    let text = await (await scrape(reporter)).text();
    expect(text.match(/^flink_taskmanager_job_task_numRecordsOut\{/gm)).toHaveLength(2);
    reporter.notifyOfRemovedMetric(first, "numRecordsOut", taskGroup(0));
    text = await (await scrape(reporter)).text();
    expect(text).not.toContain('subtask_index="0"');
    expect(text).toContain('subtask_index="1"} 2');
    reporter.notifyOfRemovedMetric(second, "numRecordsOut", taskGroup(1));
    text = await (await scrape(reporter)).text();
    expect(text).not.toContain("numRecordsOut");
  });

  it("keeps any character of label values when filterLabelValueCharacters is false", async () => {
    const reporter = reporterFor({
      "metrics.reporter.prom.port": 0,
      "metrics.reporter.prom.filterLabelValueCharacters": false,
    });
    await reporter.open();
    reporter.notifyOfAddedMetric(
      counter(() => 1),
      "numRecordsOut",
      taskGroup(0, "word count"),
    );
    const text = await (await scrape(reporter)).text();
    expect(text).toContain('job_name="word count"');
    expect(text).toContain('host="127.0.0.1"');
  });

  it("takes the next port of its range when the first one is taken", async () => {
    const taken = await takePort();
    // The range's other ports may be taken by other processes too; the reporter skips them all.
    const reporter = reporterFor({ "metrics.reporter.prom.port": `${taken}-${taken + 20}` });
    await reporter.open();
    expect(reporter.port).toBeGreaterThan(taken);
    expect(reporter.port).toBeLessThanOrEqual(taken + 20);
    expect((await scrape(reporter)).status).toBe(200);
  });

  it("fails with SLUICE_ERR_METRIC_REPORTER naming the ports when every port of its range is taken", async () => {
    const first = await takePort();
    const second = await takePort();
    const reporter = reporterFor({ "metrics.reporter.prom.port": `${first},${second}` });
    const error = (await reporter.open().then(
      () => undefined,
      (e: unknown) => e,
    )) as SluiceError | undefined;
    expect(error?.code).toBe(ErrorCodes.METRIC_REPORTER);
    expect(error?.name).toBe("MetricReporterError");
    expect(error?.message).toContain(`${first},${second}`);
    expect(error?.message).toContain("metrics.reporter.prom.port");
  });

  it("rejects a malformed port range as a configuration error", () => {
    expect(() => reporterFor({ "metrics.reporter.prom.port": "9260-9250" })).toThrow(
      expect.objectContaining({ code: ErrorCodes.CONFIG }),
    );
  });

  it("answers only /metrics and /, and only GET and HEAD", async () => {
    const reporter = reporterFor({ "metrics.reporter.prom.port": 0 });
    await reporter.open();
    expect((await scrape(reporter, "/")).status).toBe(200);
    expect((await scrape(reporter, "/other")).status).toBe(404);
    const url = reporter.url as string;
    expect((await fetch(url, { method: "POST" })).status).toBe(405);
    expect((await fetch(url, { method: "HEAD" })).status).toBe(200);
  });

  it("frees its port when closed", async () => {
    const reporter = reporterFor({ "metrics.reporter.prom.port": 0 });
    await reporter.open();
    const port = reporter.port as number;
    await reporter.close();
    const again = reporterFor({ "metrics.reporter.prom.port": port });
    await again.open();
    expect(again.port).toBe(port);
  });
});
