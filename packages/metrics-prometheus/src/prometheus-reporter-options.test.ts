import { ALL_OPTIONS } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { PrometheusReporterFactory } from "./prometheus-reporter-factory.js";
import { PrometheusReporterOptions } from "./prometheus-reporter-options.js";

describe("PrometheusReporterOptions", () => {
  it("are declared by the factory with the <name> placeholder, and none of their keys is one of Sluice's own", () => {
    const declared = new PrometheusReporterFactory().configOptions;
    expect(declared.map((option) => option.key)).toEqual([
      "metrics.reporter.<name>.port",
      "metrics.reporter.<name>.bind-host",
      "metrics.reporter.<name>.filterLabelValueCharacters",
    ]);
    const sluiceKeys = new Set(ALL_OPTIONS.map((option) => option.key));
    for (const option of declared) expect(sluiceKeys.has(option.key)).toBe(false);
  });

  it("name the keys of one reporter and keep Flink's defaults", () => {
    expect(PrometheusReporterOptions.port("prom").key).toBe("metrics.reporter.prom.port");
    expect(PrometheusReporterOptions.port("prom").defaultValue).toBe("9249");
    expect(PrometheusReporterOptions.filterLabelValueCharacters("prom").defaultValue).toBe(true);
  });
});
