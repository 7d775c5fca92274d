import { ConfigurationError, ErrorCodes, type SluiceError } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { ConfigOptions, inRange, readableConfigOf } from "./config-option.js";
import { formatDuration, parseDuration, tryParseDuration } from "./duration.js";
import { formatMemorySize, parseMemorySize, tryParseMemorySize } from "./memory-size.js";

function configError(fn: () => unknown): SluiceError {
  return expectError(fn, ConfigurationError, ErrorCodes.CONFIG);
}

describe("memory sizes", () => {
  it.each([
    ["64mb", 64 * 1024 ** 2],
    ["32kb", 32 * 1024],
    ["1 gb", 1024 ** 3],
    ["1GB", 1024 ** 3],
    ["  2 t ", 2 * 1024 ** 4],
    ["5tb", 5 * 1024 ** 4],
    ["123", 123],
    ["0", 0],
    ["7b", 7],
    ["9 bytes", 9],
    ["3k", 3072],
    ["4 m", 4 * 1024 ** 2],
    ["1 kibibytes", 1024],
    ["2 MEBIBYTES", 2 * 1024 ** 2],
  ])("parses %j to %d bytes", (text, bytes) => {
    expect(parseMemorySize(text)).toBe(bytes);
  });

  it.each(["", "mb", "1.5mb", "-1kb", "10 xb", "64 mb extra", "1e3", "99999999999999 tb"])(
    "rejects %j",
    (text) => {
      expect(tryParseMemorySize(text)).toBeUndefined();
      expect(() => parseMemorySize(text)).toThrow(/is not a memory size/);
    },
  );

  it("formats with the largest exact unit and parses the result back", () => {
    expect(formatMemorySize(64 * 1024 ** 2)).toBe("64 mb");
    expect(formatMemorySize(32 * 1024)).toBe("32 kb");
    expect(formatMemorySize(1536)).toBe("1536 bytes");
    expect(formatMemorySize(0)).toBe("0 bytes");
    for (const bytes of [0, 1, 1023, 1024, 1025, 3 * 1024 ** 3, 2 ** 40]) {
      expect(parseMemorySize(formatMemorySize(bytes))).toBe(bytes);
    }
  });
});

describe("durations", () => {
  it.each([
    ["100ms", 100],
    ["10s", 10_000],
    ["10 s", 10_000],
    ["1 min", 60_000],
    ["3m", 180_000],
    ["2h", 7_200_000],
    ["1d", 86_400_000],
    ["250", 250],
    ["5 seconds", 5000],
    ["1 MINUTES", 60_000],
    ["500us", 0.5],
    ["2000000ns", 2],
  ])("parses %j to %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "s", "1.5s", "-1s", "10 parsecs", "ten seconds"])("rejects %j", (text) => {
    expect(tryParseDuration(text)).toBeUndefined();
    expect(() => parseDuration(text)).toThrow(/is not a duration/);
  });

  it("formats with the largest exact unit and parses the result back", () => {
    expect(formatDuration(100)).toBe("100 ms");
    expect(formatDuration(10_000)).toBe("10 s");
    expect(formatDuration(120_000)).toBe("2 min");
    expect(formatDuration(0)).toBe("0 ms");
    for (const ms of [0, 1, 999, 1000, 90_000, 3_600_000, 86_400_000 * 3]) {
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    }
  });
});

describe("ConfigOption", () => {
  const port = ConfigOptions.key("test.port")
    .intType()
    .defaultValue(0)
    .withValidator(inRange(0, 65535, "a port number"))
    .withDescription("a port");

  it("keeps key, type, default, description and fallback keys", () => {
    const option = ConfigOptions.key("a.b")
      .memoryType()
      .defaultValue("32kb")
      .withFallbackKeys("a.c")
      .withDeprecatedKeys("a.d")
      .withDescription("desc");
    expect(option.key).toBe("a.b");
    expect(option.type).toBe("memory");
    expect(option.defaultValue).toBe(32 * 1024);
    expect(option.hasDefaultValue).toBe(true);
    expect(option.description).toBe("desc");
    expect(option.fallbackKeys).toEqual([
      { key: "a.c", isDeprecated: false },
      { key: "a.d", isDeprecated: true },
    ]);
    expect(option.formatValue(option.defaultValue)).toBe("32 kb");
  });

  it("parses each type from YAML scalars and -D strings", () => {
    expect(port.parse(8080)).toBe(8080);
    expect(port.parse(" 8080 ")).toBe(8080);
    expect(ConfigOptions.key("x").numberType().defaultValue(0.1).parse("0.25")).toBe(0.25);
    const flag = ConfigOptions.key("x").booleanType().defaultValue(false);
    expect(flag.parse(true)).toBe(true);
    expect(flag.parse("TRUE")).toBe(true);
    expect(flag.parse("false")).toBe(false);
    expect(ConfigOptions.key("x").stringType().defaultValue("").parse(127)).toBe("127");
    expect(ConfigOptions.key("x").durationType().defaultValue(0).parse("2 min")).toBe(120_000);
    expect(ConfigOptions.key("x").durationType().defaultValue(0).parse(250)).toBe(250);
    expect(ConfigOptions.key("x").memoryType().defaultValue(0).parse(4096)).toBe(4096);
    const mode = ConfigOptions.key("x").enumType(["TLSv1.2", "TLSv1.3"]).defaultValue("TLSv1.2");
    expect(mode.parse("tlsv1.3")).toBe("TLSv1.3");
    expect(mode.enumValues).toEqual(["TLSv1.2", "TLSv1.3"]);
    expect(ConfigOptions.key("x").classType().defaultValue("a#B").parse(" pkg#Factory ")).toBe(
      "pkg#Factory",
    );
  });

  it("rejects a wrongly typed value with an error naming the key, the value and the expectation", () => {
    const error = configError(() => port.parse("eighty"));
    expect(error.message).toContain('"test.port"');
    expect(error.message).toContain('"eighty"');
    expect(error.message).toContain("a whole number");
  });

  it("rejects a value that fails the validator, naming the range", () => {
    const error = configError(() => port.parse(70000));
    expect(error.message).toContain("70000");
    expect(error.message).toContain("a port number in [0, 65535]");
  });

  it.each([
    ["integer", ConfigOptions.key("k").intType().defaultValue(1), "1.5"],
    ["integer", ConfigOptions.key("k").intType().defaultValue(1), true],
    ["number", ConfigOptions.key("k").numberType().defaultValue(1), "abc"],
    ["boolean", ConfigOptions.key("k").booleanType().defaultValue(true), "yes"],
    ["memory", ConfigOptions.key("k").memoryType().defaultValue(1), "12 parsecs"],
    ["memory", ConfigOptions.key("k").memoryType().defaultValue(1), -5],
    ["duration", ConfigOptions.key("k").durationType().defaultValue(1), "soon"],
    ["enum", ConfigOptions.key("k").enumType(["A", "B"]).defaultValue("A"), "C"],
    ["class", ConfigOptions.key("k").classType().defaultValue("a"), "pkg#"],
    ["class", ConfigOptions.key("k").classType().defaultValue("a"), "#Export"],
    ["string", ConfigOptions.key("k").stringType().defaultValue(""), ["a", "b"]],
  ])("rejects an invalid %s value %j", (_type, option, raw) => {
    const error = configError(() => option.parse(raw));
    expect(error.message).toContain('"k"');
  });

  it("names the fallback key the value was read from", () => {
    const error = configError(() => port.parse("x", "old.port"));
    expect(error.message).toContain('"old.port" (read as a fallback of "test.port")');
  });

  it("fails at definition time when a default is invalid or breaks its validator", () => {
    configError(() => ConfigOptions.key("k").memoryType().defaultValue("lots"));
    configError(() =>
      ConfigOptions.key("k").intType().defaultValue(-1).withValidator(inRange(0, 1)),
    );
    configError(() => ConfigOptions.key(" spaced "));
    configError(() => ConfigOptions.key("k").intType().defaultValue(1).withFallbackKeys("k"));
  });

  it("returns undefined as default for options without default", () => {
    const option = ConfigOptions.key("k").memoryType().noDefaultValue();
    expect(option.hasDefaultValue).toBe(false);
    expect(option.defaultValue).toBeUndefined();
    expect(option.formatValue(undefined)).toBe("(none)");
  });
});

describe("readableConfigOf", () => {
  const timeout = ConfigOptions.key("new.timeout")
    .durationType()
    .defaultValue("120s")
    .withFallbackKeys("other.timeout")
    .withDeprecatedKey("old.timeoutSec", { plainNumberUnit: "s" });

  it("reads the own key first, then fallback keys in order, then the default", () => {
    expect(readableConfigOf({}).get(timeout)).toBe(120_000);
    expect(readableConfigOf({ "old.timeoutSec": 5 }).get(timeout)).toBe(5000);
    expect(readableConfigOf({ "old.timeoutSec": 5, "other.timeout": "7s" }).get(timeout)).toBe(
      7000,
    );
    expect(readableConfigOf({ "old.timeoutSec": 5, "new.timeout": "1 min" }).get(timeout)).toBe(
      60_000,
    );
  });

  it("applies a deprecated key's unit only to plain numbers", () => {
    expect(readableConfigOf({ "old.timeoutSec": "30" }).get(timeout)).toBe(30_000);
    expect(readableConfigOf({ "old.timeoutSec": "30ms" }).get(timeout)).toBe(30);
  });

  it("tells set from unset options", () => {
    const config = readableConfigOf({ "other.timeout": "1s" });
    expect(config.contains(timeout)).toBe(true);
    expect(config.getOptional(timeout)).toBe(1000);
    expect(readableConfigOf({}).getOptional(timeout)).toBeUndefined();
    expect(readableConfigOf({}).contains(timeout)).toBe(false);
  });
});
