import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, type SluiceError } from "@sluice/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Configuration } from "../config/configuration.js";
import { LocalCluster, localConfiguration } from "../taskexecutor/test-support/local-cluster.js";
import { TaskManagerMetricGroup } from "./groups/task-manager-metric-group.js";
import { MetricRegistry } from "./metric-registry.js";

/** A third-party reporter module, written to a temporary folder: the runtime knows nothing of it. */
const REPORTER_SOURCE = `
const BRAND = Symbol.for("@sluice/metric-reporter-factory");
function reporter(context, open) {
  const record = { name: context.name, properties: context.properties, added: [], removed: [], opened: 0, closed: 0 };
  (globalThis.__sluiceFixtureReporters ??= []).push(record);
  return {
    record,
    open() { record.opened++; open?.(); },
    notifyOfAddedMetric(metric, name, group) { record.added.push(group.getMetricIdentifier(name)); },
    notifyOfRemovedMetric(metric, name, group) { record.removed.push(group.getMetricIdentifier(name)); },
    close() { record.closed++; },
  };
}
export class FixtureReporterFactory {
  [BRAND] = true;
  createMetricReporter(context) { return reporter(context); }
}
export class FailingOpenFactory {
  createMetricReporter(context) {
    return reporter(context, () => { throw new Error("no license for this reporter"); });
  }
}
export class AsyncFactory {
  async createMetricReporter(context) { return reporter(context); }
}
export class HalfReporterFactory {
  createMetricReporter() { return { notifyOfAddedMetric() {} }; }
}
export class ThrowingFactory {
  constructor() { throw new Error("bad constructor"); }
}
export const notAFactory = { hello: 1 };
`;

interface FixtureRecord {
  readonly name: string;
  readonly properties: Record<string, unknown>;
  readonly added: string[];
  readonly removed: string[];
  readonly opened: number;
  readonly closed: number;
}

let dir: string;
let file: string;

beforeEach(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "sluice-reporter-")));
  file = path.join(dir, "reporters.mjs");
  writeFileSync(file, REPORTER_SOURCE);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function recordOf(registry: MetricRegistry, name: string): FixtureRecord {
  const reporter = registry.getReporter(name) as unknown as { record: FixtureRecord } | undefined;
  if (reporter === undefined) throw new Error(`no reporter ${name}`);
  return reporter.record;
}

async function setupError(entries: Record<string, unknown>): Promise<SluiceError> {
  try {
    const registry = await MetricRegistry.fromConfiguration(new Configuration(entries), {
      loader: { cwd: dir },
    });
    await registry.close();
  } catch (error) {
    return error as SluiceError;
  }
  throw new Error("expected the reporter set-up to fail");
}

describe("metric reporters loaded by class name", () => {
  it("loads a reporter from a module file and hands it the keys under metrics.reporter.<name>.", async () => {
    const registry = await MetricRegistry.fromConfiguration(
      new Configuration({
        "metrics.reporter.fix.factory.class": `${file}#FixtureReporterFactory`,
        "metrics.reporter.fix.greeting": "hello",
      }),
      { updateViewsAutomatically: false },
    );
    const record = recordOf(registry, "fix");
    expect(record.opened).toBe(1);
    expect(record.properties).toEqual({
      "factory.class": `${file}#FixtureReporterFactory`,
      greeting: "hello",
    });
    const tm = new TaskManagerMetricGroup(registry, "h", "tm");
    tm.gauge("answer", () => 42);
    expect(record.added).toEqual(["h.taskmanager.tm.answer"]);
    tm.close();
    expect(record.removed).toEqual(["h.taskmanager.tm.answer"]);
    await registry.close();
    expect(record.closed).toBe(1);
  });

  it("reports a worker's shuffle metrics to a third-party reporter and closes it with the worker", async () => {
    const cluster = new LocalCluster();
    const executor = await cluster.startExecutor(
      localConfiguration({
        "metrics.reporter.fix.factory.class": `${file}#FixtureReporterFactory`,
      }),
    );
    const record = recordOf(executor.metricGroup.registry, "fix");
    const prefix = `127.0.0.1.taskmanager.${executor.resourceId}`;
    expect(record.added).toContain(`${prefix}.Status.Shuffle.Netty.TotalMemorySegments`);
    await cluster.close();
    expect(record.closed).toBe(1);
  });

  it("starts only the reporters metrics.reporters lists", async () => {
    const registry = await MetricRegistry.fromConfiguration(
      new Configuration({
        "metrics.reporters": "b",
        "metrics.reporter.a.factory.class": `${file}#FixtureReporterFactory`,
        "metrics.reporter.b.factory.class": `${file}#FixtureReporterFactory`,
      }),
    );
    expect(registry.reporters.map((setup) => setup.name)).toEqual(["b"]);
    await registry.close();
  });

  it("closes the reporters it opened when a later one fails to open", async () => {
    const records: FixtureRecord[] = [];
    (globalThis as { __sluiceFixtureReporters?: FixtureRecord[] }).__sluiceFixtureReporters =
      records;
    const error = await setupError({
      "metrics.reporter.first.factory.class": `${file}#FixtureReporterFactory`,
      "metrics.reporter.second.factory.class": `${file}#FailingOpenFactory`,
    });
    delete (globalThis as { __sluiceFixtureReporters?: FixtureRecord[] }).__sluiceFixtureReporters;
    expect(records.map((r) => [r.name, r.opened, r.closed])).toEqual([
      ["first", 1, 1],
      ["second", 1, 1],
    ]);
    expect(error.code).toBe(ErrorCodes.METRIC_REPORTER);
    expect(error.name).toBe("MetricReporterError");
    expect(error.message).toContain('"second"');
    expect(error.message).toContain("no license for this reporter");
  });

  it.each([
    ["a missing module", `${"./missing.mjs"}#X`, ErrorCodes.PLUGIN_NOT_FOUND, "cannot find module"],
    ["a missing export", "#NoSuchFactory", ErrorCodes.PLUGIN_EXPORT_MISSING, "no export named"],
    [
      "an export that is no factory",
      "#notAFactory",
      ErrorCodes.PLUGIN_INVALID,
      "is not a MetricReporterFactory",
    ],
    [
      "a throwing constructor",
      "#ThrowingFactory",
      ErrorCodes.PLUGIN_INSTANTIATION,
      "bad constructor",
    ],
    [
      "a factory returning a Promise",
      "#AsyncFactory",
      ErrorCodes.PLUGIN_CONTRACT,
      "returned a Promise",
    ],
    [
      "a reporter without its methods",
      "#HalfReporterFactory",
      ErrorCodes.PLUGIN_CONTRACT,
      "notifyOfRemovedMetric()",
    ],
  ])("fails with a code for %s", async (_what, reference, code, message) => {
    const value = reference.startsWith("#") ? `${file}${reference}` : reference;
    const error = await setupError({ "metrics.reporter.bad.factory.class": value });
    expect(error.code).toBe(code);
    expect(error.message).toContain(message);
    if (code !== ErrorCodes.PLUGIN_CONTRACT) {
      expect(error.message).toContain("metrics.reporter.bad.factory.class");
    }
  });

  it("fails with a configuration error for a reporter that has keys but no factory class", async () => {
    const error = await setupError({ "metrics.reporter.graphite.port": 2003 });
    expect(error.code).toBe(ErrorCodes.CONFIG);
    expect(error.message).toContain("metrics.reporter.graphite.factory.class");
  });

  it("gives the reporter named prom the bundled Prometheus reporter when no factory class is set", async () => {
    const error = await setupError({ "metrics.reporter.prom.port": "9250-9260" });
    expect(error.code).toBe(ErrorCodes.PLUGIN_NOT_FOUND);
    expect(error.message).toContain(
      'metrics.reporter.prom.factory.class = "prometheus" (alias of "@sluice/metrics-prometheus#PrometheusReporterFactory") (the default)',
    );
  });
});
