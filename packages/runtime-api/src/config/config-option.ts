import { ConfigurationError, describeValue } from "@sluice/core";
import { DURATION_SYNTAX, formatDuration, tryParseDuration } from "./duration.js";
import { formatMemorySize, MEMORY_SIZE_SYNTAX, tryParseMemorySize } from "./memory-size.js";

/**
 * The value type of a {@link ConfigOption}. It decides how a raw value (a YAML scalar or a `-D`
 * string) is parsed:
 *
 * - `string`: any scalar, as text.
 * - `integer`: a whole number (`10`, `"10"`).
 * - `number`: any finite number (`0.1`).
 * - `boolean`: `true`/`false` (case-insensitive in text).
 * - `memory`: a memory size (`64mb`, `32 kb`, plain number = bytes), parsed to bytes.
 * - `duration`: a duration (`100ms`, `10 s`, `2min`, plain number = milliseconds), parsed to ms.
 * - `enum`: one of a fixed list of names (case-insensitive), parsed to the canonical spelling.
 * - `class`: a plugin reference `module#Export` (see `shuffle-service-factory.class`).
 */
export type ConfigOptionType =
  | "string"
  | "integer"
  | "number"
  | "boolean"
  | "memory"
  | "duration"
  | "enum"
  | "class";

/**
 * Another key an option is also read from when its own key is not set (Flink's fallback and
 * deprecated keys). Keys are tried in declaration order.
 */
export interface FallbackKey {
  /** The other key. */
  readonly key: string;
  /** True for an old spelling kept for compatibility; reading it emits a deprecation warning. */
  readonly isDeprecated: boolean;
  /**
   * For an old key whose value was a plain number in another unit (e.g. seconds for
   * `taskmanager.network.netty.client.connectTimeoutSec`): the unit appended to a plain number
   * read from this key before it is parsed as the option's type.
   */
  readonly plainNumberUnit?: string;
}

/**
 * A typed, documented configuration key (Flink's `ConfigOption`): the key, its value type, its
 * default, a description and the fallback keys it is also read from.
 *
 * Options are immutable values, defined once at module level (see `ALL_OPTIONS`) and read with
 * {@link ReadableConfig.get}. The `with*` methods return a new option. Configuration
 * implementations call {@link ConfigOption.parse} on the raw value they hold; plugins never parse
 * raw values themselves.
 */
export interface ConfigOption<T> {
  /** The key, e.g. `taskmanager.memory.segment-size`. */
  readonly key: string;
  /** How raw values are parsed. */
  readonly type: ConfigOptionType;
  /** The value when neither the key nor a fallback key is set; `undefined` for "no default". */
  readonly defaultValue: T;
  /** False for options created with `noDefaultValue()`. */
  readonly hasDefaultValue: boolean;
  /** What the option does (Markdown; shown in `docs/configuration.md`). */
  readonly description: string;
  /** Keys also read when `key` is not set, in order. */
  readonly fallbackKeys: readonly FallbackKey[];
  /** The accepted names for `enum` options; `undefined` for other types. */
  readonly enumValues: readonly string[] | undefined;
  /**
   * Parses and validates a raw value (a YAML scalar, a `-D` string or a typed value given to
   * `set`).
   *
   * @param raw the raw value.
   * @param sourceKey the key the value was read from, when it is a fallback key (for the message).
   * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) naming the key, the value and what was
   *   expected.
   */
  parse(raw: unknown, sourceKey?: string): Exclude<T, undefined>;
  /** Formats a value for humans and docs: `65536 → "64 kb"`, `undefined → "(none)"`. */
  formatValue(value: T): string;
  /** Returns a copy with another description. */
  withDescription(description: string): ConfigOption<T>;
  /** Returns a copy that is also read from `keys` (not deprecated) when its own key is unset. */
  withFallbackKeys(...keys: string[]): ConfigOption<T>;
  /** Returns a copy that is also read from the deprecated `keys` when its own key is unset. */
  withDeprecatedKeys(...keys: string[]): ConfigOption<T>;
  /**
   * Returns a copy also read from one deprecated key whose plain numbers are in another unit, e.g.
   * `withDeprecatedKey("…connectTimeoutSec", { plainNumberUnit: "s" })`.
   */
  withDeprecatedKey(key: string, options: { plainNumberUnit?: string }): ConfigOption<T>;
  /**
   * Returns a copy that also checks parsed values: `check` returns `undefined` when the value is
   * fine, else what was expected (e.g. "a port number in [0, 65535]").
   */
  withValidator(check: (value: Exclude<T, undefined>) => string | undefined): ConfigOption<T>;
}

/**
 * The read-only view of a configuration that Sluice hands to plugins
 * (`ShuffleEnvironmentContext.configuration`, `ShuffleMasterContext.configuration`). Implemented by
 * `@sluice/runtime`'s `Configuration` and by {@link readableConfigOf}.
 */
export interface ReadableConfig {
  /**
   * The value of `option`: read from its key, else from its fallback keys in order, else its
   * default. Called by plugins whenever they need a setting; cheap enough to call at set-up time,
   * not meant for the per-record path.
   *
   * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) when the configured value is invalid.
   */
  get<T>(option: ConfigOption<T>): T;
  /** Like {@link get}, but `undefined` when neither the key nor a fallback key is set. */
  getOptional<T>(option: ConfigOption<T>): Exclude<T, undefined> | undefined;
  /** True when the key or one of the fallback keys is set. */
  contains(option: ConfigOption<unknown>): boolean;
}

/** Where {@link findRawValue} found a value. */
export interface ResolvedRawValue {
  /** The key that was set: the option's own key or one of its fallback keys. */
  readonly key: string;
  /** The raw value stored under that key. */
  readonly raw: unknown;
  /** The fallback key entry when the value came from a fallback key. */
  readonly fallback: FallbackKey | undefined;
}

/**
 * Finds the raw value of `option` in a key/value store: its own key first, then its fallback keys
 * in order. Shared by every {@link ReadableConfig} implementation so they agree on precedence.
 */
export function findRawValue(
  option: ConfigOption<unknown>,
  getRaw: (key: string) => unknown,
): ResolvedRawValue | undefined {
  const own = getRaw(option.key);
  if (own !== undefined) return { key: option.key, raw: own, fallback: undefined };
  for (const fallback of option.fallbackKeys) {
    const raw = getRaw(fallback.key);
    if (raw !== undefined) return { key: fallback.key, raw, fallback };
  }
  return undefined;
}

/**
 * Parses a value found by {@link findRawValue}, applying a fallback key's `plainNumberUnit`.
 */
export function parseResolvedValue<T>(
  option: ConfigOption<T>,
  found: ResolvedRawValue,
): Exclude<T, undefined> {
  let raw = found.raw;
  const unit = found.fallback?.plainNumberUnit;
  if (unit !== undefined && isPlainNumber(raw)) raw = `${String(raw).trim()} ${unit}`;
  return option.parse(raw, found.key === option.key ? undefined : found.key);
}

function isPlainNumber(raw: unknown): boolean {
  return (
    (typeof raw === "number" && Number.isFinite(raw)) ||
    (typeof raw === "string" && /^\s*\d+\s*$/.test(raw))
  );
}

/**
 * A {@link ReadableConfig} over a plain object of raw values (`{ "taskmanager.data.port": 0 }`):
 * for plugin tests and tools that do not want `@sluice/runtime`'s `Configuration`.
 */
export function readableConfigOf(entries: Readonly<Record<string, unknown>>): ReadableConfig {
  const values = new Map(Object.entries(entries));
  const getRaw = (key: string) => values.get(key);
  return {
    get<T>(option: ConfigOption<T>): T {
      const found = findRawValue(option, getRaw);
      return found === undefined ? option.defaultValue : parseResolvedValue(option, found);
    },
    getOptional<T>(option: ConfigOption<T>): Exclude<T, undefined> | undefined {
      const found = findRawValue(option, getRaw);
      return found === undefined ? undefined : parseResolvedValue(option, found);
    },
    contains(option: ConfigOption<unknown>): boolean {
      return findRawValue(option, getRaw) !== undefined;
    },
  };
}

const INVALID: unique symbol = Symbol("invalid");

interface ValueType<V> {
  readonly type: ConfigOptionType;
  readonly expected: string;
  readonly enumValues?: readonly string[];
  parse(raw: unknown): V | typeof INVALID;
  format(value: V): string;
}

function scalarText(raw: unknown): string | undefined {
  if (typeof raw === "string") return raw;
  if (typeof raw === "number" || typeof raw === "boolean" || typeof raw === "bigint") {
    return String(raw);
  }
  return undefined;
}

const STRING: ValueType<string> = {
  type: "string",
  expected: "a string",
  parse: (raw) => scalarText(raw) ?? INVALID,
  format: (value) => value,
};

const CLASS: ValueType<string> = {
  type: "class",
  expected:
    'a plugin reference "<module>#<export>" (a package name, a relative or absolute path or a ' +
    "file: URL; without #, the default export) or an alias such as tcp or ws",
  parse: (raw) => {
    const text = typeof raw === "string" ? raw.trim() : "";
    return text === "" || text.startsWith("#") || text.endsWith("#") ? INVALID : text;
  },
  format: (value) => value,
};

const INTEGER: ValueType<number> = {
  type: "integer",
  expected: "a whole number",
  parse: (raw) => {
    if (typeof raw === "number") return Number.isSafeInteger(raw) ? raw : INVALID;
    if (typeof raw === "string" && /^\s*[+-]?\d+\s*$/.test(raw)) {
      const value = Number(raw);
      return Number.isSafeInteger(value) ? value : INVALID;
    }
    return INVALID;
  },
  format: (value) => String(value),
};

const NUMBER: ValueType<number> = {
  type: "number",
  expected: "a number",
  parse: (raw) => {
    if (typeof raw === "number") return Number.isFinite(raw) ? raw : INVALID;
    if (typeof raw === "string" && raw.trim() !== "") {
      const value = Number(raw);
      return Number.isFinite(value) ? value : INVALID;
    }
    return INVALID;
  },
  format: (value) => String(value),
};

const BOOLEAN: ValueType<boolean> = {
  type: "boolean",
  expected: "true or false",
  parse: (raw) => {
    if (typeof raw === "boolean") return raw;
    if (typeof raw === "string") {
      const text = raw.trim().toLowerCase();
      if (text === "true") return true;
      if (text === "false") return false;
    }
    return INVALID;
  },
  format: (value) => String(value),
};

const MEMORY: ValueType<number> = {
  type: "memory",
  expected: `a memory size: ${MEMORY_SIZE_SYNTAX}`,
  parse: (raw) => {
    if (typeof raw === "number") return Number.isSafeInteger(raw) && raw >= 0 ? raw : INVALID;
    if (typeof raw === "string") return tryParseMemorySize(raw) ?? INVALID;
    return INVALID;
  },
  format: formatMemorySize,
};

const DURATION: ValueType<number> = {
  type: "duration",
  expected: `a duration: ${DURATION_SYNTAX}`,
  parse: (raw) => {
    if (typeof raw === "number") return Number.isFinite(raw) && raw >= 0 ? raw : INVALID;
    if (typeof raw === "string") return tryParseDuration(raw) ?? INVALID;
    return INVALID;
  },
  format: formatDuration,
};

function enumValueType<E extends string>(values: readonly E[]): ValueType<E> {
  const byLowerCase = new Map(values.map((value) => [value.toLowerCase(), value]));
  return {
    type: "enum",
    expected: `one of ${values.join(", ")} (case-insensitive)`,
    enumValues: values,
    parse: (raw) =>
      typeof raw === "string" ? (byLowerCase.get(raw.trim().toLowerCase()) ?? INVALID) : INVALID,
    format: (value) => value,
  };
}

interface OptionState<V> {
  readonly key: string;
  readonly valueType: ValueType<V>;
  readonly defaultValue: V | undefined;
  readonly hasDefaultValue: boolean;
  readonly description: string;
  readonly fallbackKeys: readonly FallbackKey[];
  readonly validators: readonly ((value: V) => string | undefined)[];
}

class ConfigOptionImpl<V, T extends V | undefined> implements ConfigOption<T> {
  readonly key: string;
  readonly type: ConfigOptionType;
  readonly defaultValue: T;
  readonly hasDefaultValue: boolean;
  readonly description: string;
  readonly fallbackKeys: readonly FallbackKey[];
  readonly enumValues: readonly string[] | undefined;

  constructor(private readonly state: OptionState<V>) {
    this.key = state.key;
    this.type = state.valueType.type;
    this.defaultValue = state.defaultValue as T;
    this.hasDefaultValue = state.hasDefaultValue;
    this.description = state.description;
    this.fallbackKeys = state.fallbackKeys;
    this.enumValues = state.valueType.enumValues;
    Object.freeze(this);
  }

  parse(raw: unknown, sourceKey?: string): Exclude<T, undefined> {
    const parsed = this.state.valueType.parse(raw);
    if (parsed === INVALID) this.fail(raw, this.state.valueType.expected, sourceKey);
    for (const check of this.state.validators) {
      const expected = check(parsed);
      if (expected !== undefined) this.fail(raw, expected, sourceKey);
    }
    return parsed as Exclude<T, undefined>;
  }

  formatValue(value: T): string {
    return value === undefined ? "(none)" : this.state.valueType.format(value as V);
  }

  withDescription(description: string): ConfigOption<T> {
    return new ConfigOptionImpl<V, T>({ ...this.state, description });
  }

  withFallbackKeys(...keys: string[]): ConfigOption<T> {
    return this.addFallbacks(keys.map((key) => ({ key, isDeprecated: false })));
  }

  withDeprecatedKeys(...keys: string[]): ConfigOption<T> {
    return this.addFallbacks(keys.map((key) => ({ key, isDeprecated: true })));
  }

  withDeprecatedKey(key: string, options: { plainNumberUnit?: string }): ConfigOption<T> {
    const fallback: FallbackKey =
      options.plainNumberUnit === undefined
        ? { key, isDeprecated: true }
        : { key, isDeprecated: true, plainNumberUnit: options.plainNumberUnit };
    return this.addFallbacks([fallback]);
  }

  withValidator(check: (value: Exclude<T, undefined>) => string | undefined): ConfigOption<T> {
    const validators = [...this.state.validators, check as (value: V) => string | undefined];
    if (this.state.hasDefaultValue && this.state.defaultValue !== undefined) {
      const expected = check(this.state.defaultValue as Exclude<T, undefined>);
      if (expected !== undefined) {
        throw new ConfigurationError(
          `the default of config key "${this.key}" fails its own check: expected ${expected}`,
        );
      }
    }
    return new ConfigOptionImpl<V, T>({ ...this.state, validators });
  }

  toString(): string {
    return `ConfigOption(${this.key})`;
  }

  private addFallbacks(fallbacks: FallbackKey[]): ConfigOption<T> {
    for (const fallback of fallbacks) {
      if (
        fallback.key === this.key ||
        this.state.fallbackKeys.some((f) => f.key === fallback.key)
      ) {
        throw new ConfigurationError(`config key "${this.key}" lists "${fallback.key}" twice`);
      }
    }
    return new ConfigOptionImpl<V, T>({
      ...this.state,
      fallbackKeys: [...this.state.fallbackKeys, ...fallbacks],
    });
  }

  private fail(raw: unknown, expected: string, sourceKey: string | undefined): never {
    const where =
      sourceKey === undefined || sourceKey === this.key
        ? `config key "${this.key}"`
        : `config key "${sourceKey}" (read as a fallback of "${this.key}")`;
    throw new ConfigurationError(
      // A YAML key without a value reads as null.
      `Invalid value for ${where}: ${raw === null ? "null (no value)" : describeValue(raw)}; expected ${expected}`,
    );
  }
}

/**
 * The second builder step: the type is known, the default is not. Obtained from
 * {@link ConfigOptions.key}.
 *
 * @typeParam V the parsed value type.
 * @typeParam D what `defaultValue` accepts: `V`, or for memory/duration options also text such as
 *   `"64mb"` that is parsed once, when the option is defined.
 */
export class TypedConfigOptionBuilder<V, D = V> {
  /** @internal */
  constructor(
    private readonly key: string,
    private readonly valueType: ValueType<V>,
  ) {}

  /** Finishes the option with a default value. */
  defaultValue(value: D): ConfigOption<V> {
    const parsed =
      typeof value === "string" &&
      (this.valueType.type === "memory" || this.valueType.type === "duration")
        ? this.valueType.parse(value)
        : (value as unknown as V);
    if (parsed === INVALID) {
      throw new ConfigurationError(
        `the default ${JSON.stringify(value)} of config key "${this.key}" is not ${this.valueType.expected}`,
      );
    }
    return new ConfigOptionImpl<V, V>({
      key: this.key,
      valueType: this.valueType,
      defaultValue: parsed,
      hasDefaultValue: true,
      description: "",
      fallbackKeys: [],
      validators: [],
    });
  }

  /** Finishes the option without default: `get` returns `undefined` while it is not set. */
  noDefaultValue(): ConfigOption<V | undefined> {
    return new ConfigOptionImpl<V, V | undefined>({
      key: this.key,
      valueType: this.valueType,
      defaultValue: undefined,
      hasDefaultValue: false,
      description: "",
      fallbackKeys: [],
      validators: [],
    });
  }
}

/** The first builder step: the key is known, the type is not. */
export class ConfigOptionBuilder {
  /** @internal */
  constructor(private readonly key: string) {}

  /** Any scalar, as text. */
  stringType(): TypedConfigOptionBuilder<string> {
    return new TypedConfigOptionBuilder(this.key, STRING);
  }
  /** A whole number. */
  intType(): TypedConfigOptionBuilder<number> {
    return new TypedConfigOptionBuilder(this.key, INTEGER);
  }
  /** Any finite number. */
  numberType(): TypedConfigOptionBuilder<number> {
    return new TypedConfigOptionBuilder(this.key, NUMBER);
  }
  /** `true` or `false`. */
  booleanType(): TypedConfigOptionBuilder<boolean> {
    return new TypedConfigOptionBuilder(this.key, BOOLEAN);
  }
  /** A memory size, parsed to bytes; the default may be given as text (`"64mb"`). */
  memoryType(): TypedConfigOptionBuilder<number, number | string> {
    return new TypedConfigOptionBuilder(this.key, MEMORY);
  }
  /** A duration, parsed to milliseconds; the default may be given as text (`"10s"`). */
  durationType(): TypedConfigOptionBuilder<number, number | string> {
    return new TypedConfigOptionBuilder(this.key, DURATION);
  }
  /** One of `values` (matched case-insensitively). */
  enumType<const E extends string>(values: readonly E[]): TypedConfigOptionBuilder<E> {
    if (values.length === 0) {
      throw new ConfigurationError(`config key "${this.key}" declares an enum without values`);
    }
    return new TypedConfigOptionBuilder(this.key, enumValueType(values));
  }
  /** A plugin reference `module#Export`. */
  classType(): TypedConfigOptionBuilder<string> {
    return new TypedConfigOptionBuilder(this.key, CLASS);
  }
}

/**
 * Builds {@link ConfigOption}s the way Flink's `ConfigOptions` does:
 *
 * ```ts
 * const SEGMENT_SIZE = ConfigOptions.key("taskmanager.memory.segment-size")
 *   .memoryType()
 *   .defaultValue("32kb")
 *   .withDescription("Size of one network buffer.");
 * ```
 */
export const ConfigOptions = {
  /** Starts an option for `key`. */
  key(key: string): ConfigOptionBuilder {
    if (typeof key !== "string" || key.trim() === "" || key !== key.trim()) {
      throw new ConfigurationError(
        `a config key must be a non-empty string without surrounding spaces, got ${JSON.stringify(key)}`,
      );
    }
    return new ConfigOptionBuilder(key);
  },
} as const;

/** A validator: the value lies in `[min, max]`. */
export function inRange(
  min: number,
  max: number,
  what = "a value",
): (value: number) => string | undefined {
  return (value) => (value >= min && value <= max ? undefined : `${what} in [${min}, ${max}]`);
}

/** A validator: the value is at least `min`. */
export function atLeast(min: number, what = "a value"): (value: number) => string | undefined {
  return (value) => (value >= min ? undefined : `${what} of at least ${min}`);
}
