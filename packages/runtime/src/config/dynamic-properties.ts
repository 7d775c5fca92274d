import { ConfigurationError } from "@sluice/core";

/** The `-D` overrides found in a list of command-line arguments, and the other arguments. */
export interface DynamicProperties {
  /** `[key, value]` pairs in argument order (a later pair overrides an earlier one). */
  readonly properties: readonly (readonly [key: string, value: string])[];
  /** Arguments that are not `-D` overrides, in order. */
  readonly remaining: readonly string[];
}

/**
 * Picks Flink-style dynamic properties out of command-line arguments: `-D key=value` (two
 * arguments) and `-Dkey=value` (one). Keys and values are trimmed; the value may contain `=`.
 * Other arguments are returned in `remaining`, untouched.
 *
 * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) for `-D` without `key=value` or with an empty
 *   key.
 */
export function parseDynamicProperties(args: readonly string[]): DynamicProperties {
  const properties: [string, string][] = [];
  const remaining: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "-D") {
      const next = args[i + 1];
      if (next === undefined) {
        throw new ConfigurationError(
          'Invalid dynamic property: "-D" is the last argument; expected -D key=value',
        );
      }
      properties.push(splitProperty(next, `-D ${next}`));
      i++;
    } else if (arg.startsWith("-D")) {
      properties.push(splitProperty(arg.slice(2), arg));
    } else {
      remaining.push(arg);
    }
  }
  return { properties, remaining };
}

function splitProperty(text: string, asWritten: string): [string, string] {
  const eq = text.indexOf("=");
  const key = eq < 0 ? "" : text.slice(0, eq).trim();
  if (key === "") {
    throw new ConfigurationError(
      `Invalid dynamic property ${JSON.stringify(asWritten)}: expected -D key=value (or -Dkey=value)`,
    );
  }
  return [key, text.slice(eq + 1).trim()];
}
