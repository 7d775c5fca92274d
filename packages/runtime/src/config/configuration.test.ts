import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ConfigurationError, ErrorCodes, type SluiceError } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import {
  ConfigOptions,
  ExecutionOptions,
  NettyShuffleEnvironmentOptions,
  NetworkMemoryOptions,
  ShuffleServiceOptions,
} from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { CONFIG_WARNING_TYPE, Configuration } from "./configuration.js";

const KB = 1024;
const MB = 1024 * KB;

let dir: string;
let warnings: MockInstance<typeof process.emitWarning>;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "sluice-config-"));
  warnings = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
});

afterEach(() => {
  warnings.mockRestore();
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(text: string, name = "config.yaml"): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

function configError(fn: () => unknown): SluiceError {
  return expectError(fn, ConfigurationError, ErrorCodes.CONFIG);
}

function sluiceWarnings(): string[] {
  return warnings.mock.calls
    .filter(
      ([, options]) => (options as { type?: string } | undefined)?.type === CONFIG_WARNING_TYPE,
    )
    .map(([message]) => String(message));
}

describe("Configuration", () => {
  it("returns each option's default when nothing is set", () => {
    const config = new Configuration();
    expect(config.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(32 * KB);
    expect(config.get(NetworkMemoryOptions.NETWORK_MEMORY_MIN)).toBe(64 * MB);
    expect(config.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL)).toBe(100);
    expect(config.get(NetworkMemoryOptions.NETWORK_MEMORY_MAX)).toBeUndefined();
    expect(config.contains(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(false);
    expect(config.getOptional(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBeUndefined();
  });

  it("parses memory sizes and durations from a flat-key config.yaml", () => {
    const config = Configuration.fromYamlFile(
      writeConfig(
        [
          "taskmanager.memory.network.min: 128mb",
          "taskmanager.memory.segment-size: 64 KB",
          "taskmanager.network.memory.buffers-per-channel: 4",
          "execution.buffer-timeout.interval: 5ms",
          "taskmanager.network.request-backoff.max: 1 min",
          "taskmanager.network.partition-request-timeout: 2500",
          "execution.buffer-timeout.enabled: false",
          "taskmanager.memory.network.fraction: 0.2",
        ].join("\n"),
      ),
    );
    expect(config.get(NetworkMemoryOptions.NETWORK_MEMORY_MIN)).toBe(128 * MB);
    expect(config.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(64 * KB);
    expect(config.get(NetworkMemoryOptions.NETWORK_BUFFERS_PER_CHANNEL)).toBe(4);
    expect(config.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL)).toBe(5);
    expect(config.get(NettyShuffleEnvironmentOptions.NETWORK_REQUEST_BACKOFF_MAX)).toBe(60_000);
    expect(config.get(NettyShuffleEnvironmentOptions.PARTITION_REQUEST_TIMEOUT)).toBe(2500);
    expect(config.get(ExecutionOptions.BUFFER_TIMEOUT_ENABLED)).toBe(false);
    expect(config.get(NetworkMemoryOptions.NETWORK_MEMORY_FRACTION)).toBe(0.2);
    expect(sluiceWarnings()).toEqual([]);
  });

  it("flattens nested YAML maps into dotted keys", () => {
    const config = Configuration.fromYamlString(
      [
        "taskmanager:",
        "  memory:",
        "    segment-size: 16kb",
        "    network.min: 32mb",
        "  network:",
        "    memory:",
        "      floating-buffers-per-gate: 16",
        "execution.buffer-timeout:",
        "  interval: 10ms",
      ].join("\n"),
    );
    expect(config.keys().sort()).toEqual([
      "execution.buffer-timeout.interval",
      "taskmanager.memory.network.min",
      "taskmanager.memory.segment-size",
      "taskmanager.network.memory.floating-buffers-per-gate",
    ]);
    expect(config.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(16 * KB);
    expect(config.get(NetworkMemoryOptions.NETWORK_EXTRA_BUFFERS_PER_GATE)).toBe(16);
    expect(config.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL)).toBe(10);
  });

  it("lets -D overrides win over the config file, in both spellings", () => {
    const file = writeConfig(
      "taskmanager.memory.segment-size: 16kb\ntaskmanager.data.port: 7000\n",
    );
    const config = Configuration.load({
      configFile: file,
      args: [
        "--job",
        "wordcount",
        "-D",
        "taskmanager.memory.segment-size=8kb",
        "-Dtaskmanager.network.retries=3",
      ],
    });
    expect(config.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(8 * KB);
    expect(config.get(NettyShuffleEnvironmentOptions.NETWORK_RETRIES)).toBe(3);
    expect(config.get(NettyShuffleEnvironmentOptions.DATA_PORT)).toBe(7000);
    expect(config.originOf("taskmanager.memory.segment-size")).toBe("-D");
    expect(config.originOf("taskmanager.data.port")).toBe(file);
  });

  it("applies a later -D over an earlier one and keeps '=' inside values", () => {
    const config = new Configuration().applyDynamicProperties([
      "-Dshuffle-service-factory.class=./a.js#A",
      "-D",
      "shuffle-service-factory.class = ./b=c.js#B ",
    ]);
    expect(config.get(ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS)).toBe("./b=c.js#B");
  });

  it.each([
    [["-D"], /"-D" is the last argument/],
    [["-Dno-equals-sign"], /"-Dno-equals-sign": expected -D key=value/],
    [["-D", "=value"], /"-D =value"/],
  ])("rejects the malformed dynamic property %j", (args, message) => {
    expect(configError(() => new Configuration().applyDynamicProperties(args)).message).toMatch(
      message,
    );
  });

  it("reads deprecated and fallback keys when the key itself is unset, and warns once", () => {
    const config = Configuration.fromYamlString(
      "taskmanager.network.netty.client.connectTimeoutSec: 30\nexecution.buffer-timeout: 7ms\n",
    );
    expect(config.get(NettyShuffleEnvironmentOptions.CLIENT_CONNECT_TIMEOUT)).toBe(30_000);
    expect(config.get(NettyShuffleEnvironmentOptions.CLIENT_CONNECT_TIMEOUT)).toBe(30_000);
    expect(config.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL)).toBe(7);
    const messages = sluiceWarnings();
    expect(messages.filter((m) => m.includes("connectTimeoutSec"))).toHaveLength(1);
    expect(messages.join("\n")).toContain(
      'use "taskmanager.network.netty.client.connect-timeout" instead',
    );

    config.set("taskmanager.network.netty.client.connect-timeout", "5s");
    expect(config.get(NettyShuffleEnvironmentOptions.CLIENT_CONNECT_TIMEOUT)).toBe(5000);
  });

  it("reports an invalid value with the key, the value, the file and the expectation", () => {
    const file = writeConfig("taskmanager.memory.segment-size: 32 kilobytes\n");
    const config = Configuration.fromYamlFile(file);
    const error = configError(() => config.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE));
    expect(error.message).toContain('"taskmanager.memory.segment-size"');
    expect(error.message).toContain('"32 kilobytes"');
    expect(error.message).toContain("a memory size");
    expect(error.message).toContain(`set in ${file}`);
  });

  it("reports an out-of-range value set by -D", () => {
    const config = new Configuration().applyDynamicProperties(["-Dtaskmanager.data.port=70000"]);
    const error = configError(() => config.get(NettyShuffleEnvironmentOptions.DATA_PORT));
    expect(error.message).toMatch(
      /"taskmanager.data.port": "70000"; expected a port number in \[0, 65535\] \(set by -D\)/,
    );
  });

  it("fails at load time, not at first use, when a known option is invalid", () => {
    const file = writeConfig("taskmanager.network.memory.buffers-per-channel: two\n");
    const error = configError(() => Configuration.load({ configFile: file }));
    expect(error.message).toContain('"taskmanager.network.memory.buffers-per-channel"');
    expect(error.message).toContain('"two"');
  });

  it.each([
    ["a file", "48kb", (file: string) => ({ configFile: file })],
    ["-D", "3000b", () => ({ args: ["-D", "taskmanager.memory.segment-size=3000b"] })],
  ])(
    "refuses at load time a segment size that is not a power of two, set in %s, naming the key and the value",
    (_where, value, options) => {
      const file = writeConfig(`taskmanager.memory.segment-size: ${value}\n`);
      const error = configError(() => Configuration.load(options(file)));
      expect(error.message).toContain('"taskmanager.memory.segment-size"');
      expect(error.message).toContain(`"${value}"`);
      expect(error.message).toContain("expected a power of two in [256 bytes, 1 gb]");
    },
  );

  it("accepts every power of two from 256 bytes to 1 gb as the segment size", () => {
    for (let size = 256; size <= 1024 ** 3; size *= 2) {
      const config = new Configuration({ "taskmanager.memory.segment-size": size });
      expect(config.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(size);
    }
    configError(() =>
      new Configuration({ "taskmanager.memory.segment-size": 256 + 1 }).get(
        NetworkMemoryOptions.MEMORY_SEGMENT_SIZE,
      ),
    );
  });

  it.each([
    ["invalid YAML", "a: [1, 2\n", /is not valid YAML/],
    [
      "a duplicate key",
      "taskmanager.data.port: 1\ntaskmanager.data.port: 2\n",
      /is not valid YAML: .*unique/s,
    ],
    [
      "the same key flat and nested",
      "taskmanager.data.port: 1\ntaskmanager:\n  data.port: 2\n",
      /"taskmanager.data.port" is set twice/,
    ],
    [
      "a key without value",
      "taskmanager.data.port:\n",
      /"taskmanager.data.port" in .* has no value/,
    ],
    ["a list at the top level", "- a\n- b\n", /must be a map of config keys/],
  ])("rejects %s in the config file", (_name, text, message) => {
    const file = writeConfig(text);
    const error = configError(() => Configuration.fromYamlFile(file));
    expect(error.message).toMatch(message);
    expect(error.message).toContain(file);
  });

  it("rejects a config file that does not exist, naming it", () => {
    const missing = path.join(dir, "nope.yaml");
    expect(configError(() => Configuration.fromYamlFile(missing)).message).toContain(
      `cannot read config file ${missing}`,
    );
  });

  it("treats an empty config file as an empty configuration", () => {
    expect(Configuration.fromYamlFile(writeConfig("# nothing here\n")).keys()).toEqual([]);
  });

  it("remembers the config file's folder for the plugin loader", () => {
    const file = writeConfig("taskmanager.data.port: 0\n", "sluice.yaml");
    const config = Configuration.fromYamlFile(file);
    expect(config.configDir).toBe(dir);
    expect(config.configFile).toBe(file);
    expect(new Configuration().configDir).toBeUndefined();
    expect(config.clone().configDir).toBe(dir);
  });

  it("lists unknown keys and, once the plugins are loaded, emits one SluiceConfigWarning naming them, with a likely fix", () => {
    const file = writeConfig(
      "taskmanager.memory.segment-sise: 32kb\nmy.app.setting: 1\ntaskmanager.network.netty.client.connectTimeoutSec: 3\n",
    );
    const config = Configuration.load({ configFile: file, args: ["-Dalso.unknown=1"] });
    expect(config.unknownKeys()).toEqual([
      "taskmanager.memory.segment-sise",
      "my.app.setting",
      "also.unknown",
    ]);
    // Nothing yet: a plugin loaded later may own some of these keys.
    expect(sluiceWarnings().filter((m) => m.includes("unknown config key"))).toEqual([]);
    expect(config.reportUnknownKeys()).toEqual([
      "taskmanager.memory.segment-sise",
      "my.app.setting",
      "also.unknown",
    ]);
    const unknownWarnings = sluiceWarnings().filter((m) => m.includes("unknown config key"));
    expect(unknownWarnings).toHaveLength(1);
    const [message] = unknownWarnings;
    expect(message).toContain('"taskmanager.memory.segment-sise"');
    expect(message).toContain('did you mean "taskmanager.memory.segment-size"?');
    expect(message).toContain('"my.app.setting"');
    expect(message).toContain('"also.unknown" (from -D)');
    expect(message).not.toContain("connectTimeoutSec");
  });

  it("knows every key of a named metric reporter, and only those", () => {
    const config = new Configuration({
      "metrics.reporter.prom.port": "9250-9260",
      "metrics.reporter.my_log.factory.class": "./log-reporter.js",
      "metrics.reporter.my_log.filter.includes": "*:numRecords*",
      "metrics.reporter.prom": "oops",
      "metrics.reporterx.port": 1,
    });
    expect(config.unknownKeys()).toEqual(["metrics.reporter.prom", "metrics.reporterx.port"]);
  });

  it("does not report keys of options the application declares as known", () => {
    const file = writeConfig("my.app.setting: 1\n");
    Configuration.load({
      configFile: file,
      knownOptions: [],
      warnUnknownKeys: true,
    }).reportUnknownKeys();
    expect(sluiceWarnings()).toHaveLength(1);
    warnings.mockClear();
    Configuration.fromYamlFile(file, { warnUnknownKeys: false }).reportUnknownKeys();
    expect(sluiceWarnings()).toEqual([]);
  });

  it("does not report the keys of a plugin's options added before the report, and reports once for a configuration and its copies", () => {
    const pluginOption = ConfigOptions.key("acme.shuffle.level")
      .intType()
      .defaultValue(3)
      .withDescription("Acme's compression level.");
    const file = writeConfig("acme.shuffle.level: 5\nacme.shuffle.levle: 6\n");
    const config = Configuration.load({ configFile: file, args: ["-Dacme.shuffle.lvl=7"] });
    const copy = config.clone().set("set.in.code", 1);
    copy.addPluginOptions([pluginOption]);
    expect(copy.reportUnknownKeys()).toEqual(["acme.shuffle.levle", "acme.shuffle.lvl"]);
    expect(config.reportUnknownKeys()).toEqual([]);
    expect(copy.reportUnknownKeys()).toEqual([]);
    const [message, ...more] = sluiceWarnings();
    expect(more).toEqual([]);
    expect(message).toContain('"acme.shuffle.levle"');
    expect(message).toContain('did you mean "acme.shuffle.level"?');
    expect(message).toContain('"acme.shuffle.lvl" (from -D)');
    // Named only as the fix of a typo, never as an unknown key itself.
    expect(message).not.toContain('"acme.shuffle.level" (from');
  });

  it("sets typed values and raw values, and exposes keys and raw values", () => {
    const config = new Configuration({ "taskmanager.data.port": "9000" });
    config
      .set(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE, 4096)
      .set("execution.buffer-timeout.interval", "1s");
    expect(config.get(NetworkMemoryOptions.MEMORY_SEGMENT_SIZE)).toBe(4096);
    expect(config.get(ExecutionOptions.BUFFER_TIMEOUT_INTERVAL)).toBe(1000);
    expect(config.getRaw("taskmanager.data.port")).toBe("9000");
    expect(config.has("taskmanager.data.port")).toBe(true);
    expect(config.keys()).toEqual([
      "taskmanager.data.port",
      "taskmanager.memory.segment-size",
      "execution.buffer-timeout.interval",
    ]);
    expect(config.toObject()).toEqual({
      "taskmanager.data.port": "9000",
      "taskmanager.memory.segment-size": 4096,
      "execution.buffer-timeout.interval": "1s",
    });
    expect(config.remove("taskmanager.data.port")).toBe(true);
    expect(config.get(NettyShuffleEnvironmentOptions.DATA_PORT)).toBe(0);
    configError(() => config.set("x", undefined));
  });
});
