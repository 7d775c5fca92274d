import { readFileSync } from "node:fs";
import { ALL_OPTIONS, CONFIG_OPTION_GROUPS, ConfigOptions } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import {
  BUNDLED_METRIC_REPORTERS,
  BUNDLED_PLUGINS,
  DEFAULT_CONFIG_DOCS_PATH,
  generateConfigurationDocs,
  loadMetricReporterOptions,
  loadPluginOptions,
} from "./generate-config-docs.js";

describe("docs/configuration.md", () => {
  it("matches the ConfigOption definitions of Sluice and the bundled plugins (run `pnpm docs:config` when this fails)", async () => {
    const committed = readFileSync(DEFAULT_CONFIG_DOCS_PATH, "utf8");
    const plugins = [
      ...(await loadPluginOptions(BUNDLED_PLUGINS)),
      ...(await loadMetricReporterOptions(BUNDLED_METRIC_REPORTERS)),
    ];
    expect(committed).toBe(generateConfigurationDocs(CONFIG_OPTION_GROUPS, plugins));
  });

  it("lists a bundled plugin's own options under its package, and leaves out plugins without", async () => {
    const plugins = await loadPluginOptions(BUNDLED_PLUGINS);
    expect(plugins.map((plugin) => plugin.packageName)).toEqual([
      "@sluice/shuffle-ws",
      "@sluice/shuffle-remote",
    ]);
    const docs = generateConfigurationDocs(CONFIG_OPTION_GROUPS, plugins);
    expect(docs).toContain("## Plugin `@sluice/shuffle-ws`");
    expect(docs).toContain("| `taskmanager.network.websocket.high-water-mark` | memory | `1 mb` |");
  });

  it("lists the bundled Prometheus reporter's options under its package, with the <name> placeholder", async () => {
    const reporters = await loadMetricReporterOptions(BUNDLED_METRIC_REPORTERS);
    expect(reporters.map((plugin) => plugin.packageName)).toEqual(["@sluice/metrics-prometheus"]);
    const docs = generateConfigurationDocs(CONFIG_OPTION_GROUPS, reporters);
    expect(docs).toContain("## Plugin `@sluice/metrics-prometheus`");
    expect(docs).toContain("| `metrics.reporter.<name>.port` | string | `9249` |");
    expect(docs).toContain("| `metrics.reporter.<name>.bind-host` | string | `127.0.0.1` |");
    expect(docs).toContain("| `metrics.reporter.<name>.filterLabelValueCharacters` | boolean |");
  });

  it("documents every option with its key, default and fallback keys", () => {
    const docs = generateConfigurationDocs();
    for (const option of ALL_OPTIONS) {
      expect(docs).toContain(`| \`${option.key}\` |`);
      for (const fallback of option.fallbackKeys) expect(docs).toContain(`\`${fallback.key}\``);
    }
    expect(docs).toContain("| `taskmanager.memory.segment-size` | memory | `32 kb` |");
    expect(docs).toContain("| `execution.buffer-timeout.interval` | duration | `100 ms` |");
    expect(docs).toContain(
      "`taskmanager.network.netty.client.connectTimeoutSec` (plain numbers in s)",
    );
  });

  it("changes when an option changes, so a stale file is detected", () => {
    const changed = ConfigOptions.key("x.y").intType().defaultValue(1).withDescription("a | b");
    const docs = generateConfigurationDocs([{ title: "T", description: "D", options: [changed] }]);
    expect(docs).toContain("| `x.y` | integer | `1` | a \\| b |");
    expect(docs).not.toBe(generateConfigurationDocs());
  });
});
