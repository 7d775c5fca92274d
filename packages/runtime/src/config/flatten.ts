import { ConfigurationError } from "@sluice/core";

function isPlainMap(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date)
  );
}

/**
 * Flattens a parsed YAML document into dotted keys: `{ taskmanager: { data: { port: 0 } } }` and
 * `{ "taskmanager.data.port": 0 }` both give `taskmanager.data.port → 0`. Lists are kept as values.
 *
 * @param source names the document in error messages (a file path or "YAML").
 * @throws ConfigurationError when two spellings give the same key, or a key has no value.
 */
export function flattenYamlDocument(document: unknown, source: string): Map<string, unknown> {
  const result = new Map<string, unknown>();
  if (document === null || document === undefined) return result;
  if (!isPlainMap(document)) {
    throw new ConfigurationError(
      `${source} must be a map of config keys to values (flat dotted keys or nested maps), got ${Array.isArray(document) ? "a list" : typeof document}`,
    );
  }
  const visit = (prefix: string, map: Record<string, unknown>) => {
    for (const [name, value] of Object.entries(map)) {
      const key = prefix === "" ? name : `${prefix}.${name}`;
      if (isPlainMap(value)) {
        if (Object.keys(value).length === 0) {
          throw new ConfigurationError(
            `config key "${key}" in ${source} is an empty map; expected a value`,
          );
        }
        visit(key, value);
        continue;
      }
      if (value === null || value === undefined) {
        throw new ConfigurationError(`config key "${key}" in ${source} has no value`);
      }
      if (result.has(key)) {
        throw new ConfigurationError(
          `config key "${key}" is set twice in ${source} (once as a dotted key and once nested)`,
        );
      }
      result.set(key, value);
    }
  };
  visit("", document);
  return result;
}
