import { ALL_OPTIONS, type ConfigOption } from "@sluice/runtime-api";

/**
 * The options a process knows once its shuffle plugin is loaded: Sluice's own and the plugin's
 * (`ShuffleServiceFactory.configOptions`). The unknown-key check reports only keys neither has.
 */
export function knownOptionsWith(
  pluginOptions: readonly ConfigOption<unknown>[],
): readonly ConfigOption<unknown>[] {
  return pluginOptions.length === 0 ? ALL_OPTIONS : [...ALL_OPTIONS, ...pluginOptions];
}

/**
 * The pattern of a key with placeholders: `<parameter>` stands for any rest of a key, any other
 * `<...>` for one component without dots (`metrics.reporter.<name>.port`).
 */
function templatePattern(key: string): RegExp {
  const source = key
    .split(/(<[^<>]+>)/)
    .map((part) => {
      if (part === "<parameter>") return ".+";
      if (/^<[^<>]+>$/.test(part)) return "[^.]+";
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("");
  return new RegExp(`^${source}$`);
}

/** A set of known keys in which keys with placeholders also know every key they match. */
class KnownKeys extends Set<string> {
  private readonly patterns: RegExp[] = [];

  override add(key: string): this {
    if (!super.has(key) && key.includes("<")) this.patterns.push(templatePattern(key));
    return super.add(key);
  }

  override has(key: string): boolean {
    return super.has(key) || this.patterns.some((pattern) => pattern.test(key));
  }
}

/**
 * Every key the options answer to: their own keys and their fallback keys. A key with
 * placeholders (the named reporters' `metrics.reporter.<name>.*`) answers to every key it matches.
 */
export function knownKeysOf(options: readonly ConfigOption<unknown>[]): Set<string> {
  const keys = new KnownKeys();
  for (const option of options) {
    keys.add(option.key);
    for (const fallback of option.fallbackKeys) keys.add(fallback.key);
  }
  return keys;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        substitution,
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** The known key closest to `key`, when it is close enough to be a likely typo. */
export function suggestKey(key: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(key.length / 8));
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance <= bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
