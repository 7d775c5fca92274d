import { readFileSync } from "node:fs";
import { ALL_OPTIONS, ConfigOptions } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG_DOCS_PATH, generateConfigurationDocs } from "./generate-config-docs.js";

describe("docs/configuration.md", () => {
  it("matches the ConfigOption definitions (run `pnpm docs:config` when this fails)", () => {
    const committed = readFileSync(DEFAULT_CONFIG_DOCS_PATH, "utf8");
    expect(committed).toBe(generateConfigurationDocs());
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
