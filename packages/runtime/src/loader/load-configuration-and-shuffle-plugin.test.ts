import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigurationError, ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { CONFIG_WARNING_TYPE } from "../config/configuration.js";
import { PluginInvalidError } from "./errors.js";
import { loadConfigurationAndShufflePlugin } from "./load-configuration-and-shuffle-plugin.js";

/** @sluice/runtime-api in this workspace: the fixture plugin builds its options with it. */
const RUNTIME_API = realpathSync(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../runtime-api"),
);

/** A third-party plugin that declares its own keys, as a package would. */
const PLUGIN_SOURCE = `
import { ConfigOptions } from "@sluice/runtime-api";
const BRAND = Symbol.for("@sluice/shuffle-service-factory");
export const AcmeOptions = {
  COMPRESSION: ConfigOptions.key("acme.shuffle.compression")
    .enumType(["none", "zstd"])
    .defaultValue("none")
    .withDescription("How Acme's shuffle compresses buffers."),
  LEVEL: ConfigOptions.key("acme.shuffle.level")
    .intType()
    .defaultValue(3)
    .withDeprecatedKeys("acme.level")
    .withDescription("Acme's compression level."),
};
export class AcmeShuffleServiceFactory {
  [BRAND] = true;
  configOptions = Object.values(AcmeOptions);
  createShuffleMaster() { return {}; }
  createShuffleEnvironment() { return {}; }
}
export class GreedyShuffleServiceFactory extends AcmeShuffleServiceFactory {
  configOptions = [
    ...Object.values(AcmeOptions),
    ConfigOptions.key("taskmanager.memory.segment-size").intType().defaultValue(1).withDescription("mine"),
  ];
}
`;

let app: string;
let warnings: MockInstance<typeof process.emitWarning>;

beforeEach(() => {
  app = realpathSync(mkdtempSync(path.join(tmpdir(), "sluice-plugin-options-")));
  // Named by path: vitest runs a module under node_modules natively, without the TypeScript
  // sources of the workspace that the fixture's import of @sluice/runtime-api resolves to.
  writeFileSync(path.join(app, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(path.join(app, "acme-shuffle.js"), PLUGIN_SOURCE);
  mkdirSync(path.join(app, "node_modules", "@sluice"), { recursive: true });
  symlinkSync(RUNTIME_API, path.join(app, "node_modules", "@sluice", "runtime-api"), "dir");
  warnings = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
});

afterEach(() => {
  warnings.mockRestore();
  rmSync(app, { recursive: true, force: true });
});

function configFile(lines: string[]): string {
  const file = path.join(app, "config.yaml");
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

function configWarnings(): string[] {
  return warnings.mock.calls
    .filter(
      ([, options]) => (options as { type?: string } | undefined)?.type === CONFIG_WARNING_TYPE,
    )
    .map(([message]) => String(message));
}

describe("loadConfigurationAndShufflePlugin", () => {
  it("knows a third-party plugin's own keys: no unknown-key warning for them, one for a typo", async () => {
    const { configuration, shuffle } = await loadConfigurationAndShufflePlugin({
      configFile: configFile([
        "shuffle-service-factory.class: ./acme-shuffle.js#AcmeShuffleServiceFactory",
        "acme.shuffle.compression: zstd",
        "acme.level: 5",
        "acme.shuffle.levle: 9",
      ]),
    });
    expect(shuffle.configOptions.map((option) => option.key)).toEqual([
      "acme.shuffle.compression",
      "acme.shuffle.level",
    ]);
    expect(configuration.get(shuffle.configOptions[0] as never)).toBe("zstd");
    const [warning, ...more] = configWarnings().filter((w) => w.startsWith("unknown config key"));
    expect(more).toEqual([]);
    expect(warning).toContain('"acme.shuffle.levle"');
    expect(warning).toContain('did you mean "acme.shuffle.level"?');
    expect(warning).not.toContain('"acme.shuffle.compression"');
    expect(warning).not.toContain('"acme.level"');
  });

  it("fails at start-up on an invalid value of a plugin option, naming the key", async () => {
    await expectRejection(
      loadConfigurationAndShufflePlugin({
        configFile: configFile([
          "shuffle-service-factory.class: ./acme-shuffle.js#AcmeShuffleServiceFactory",
          "acme.shuffle.compression: brotli",
        ]),
      }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      '"acme.shuffle.compression"',
      '"brotli"',
    );
  });

  it("applies overrides after the file and -D, before loading the plugin they name", async () => {
    const { shuffle, configuration } = await loadConfigurationAndShufflePlugin({
      configFile: configFile(["shuffle-service-factory.class: tcp"]),
      args: ["-Dacme.shuffle.level=7"],
      overrides: { "shuffle-service-factory.class": "./acme-shuffle.js#AcmeShuffleServiceFactory" },
    });
    expect(shuffle.exportName).toBe("AcmeShuffleServiceFactory");
    expect(configuration.getRaw("acme.shuffle.level")).toBe("7");
    expect(configWarnings()).toEqual([]);
  });

  it("rejects a plugin that redefines one of Sluice's keys", async () => {
    await expectRejection(
      loadConfigurationAndShufflePlugin({
        configFile: configFile([
          "shuffle-service-factory.class: ./acme-shuffle.js#GreedyShuffleServiceFactory",
        ]),
      }),
      PluginInvalidError,
      ErrorCodes.PLUGIN_INVALID,
      `configOptions redefines Sluice's own key "taskmanager.memory.segment-size"`,
    );
  });
});
