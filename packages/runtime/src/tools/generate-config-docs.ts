import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  CONFIG_OPTION_GROUPS,
  type ConfigOption,
  type ConfigOptionGroup,
} from "@sluice/runtime-api";

/**
 * Generates `docs/configuration.md` from the `ConfigOption` definitions of `@sluice/runtime-api`
 * (`CONFIG_OPTION_GROUPS`), so the documentation cannot drift from the code.
 *
 *   node packages/runtime/dist/tools/generate-config-docs.js           # rewrite the file
 *   node packages/runtime/dist/tools/generate-config-docs.js --check   # exit 1 if it is stale
 *   ... --out <file>                                                    # another target file
 */

/** Where the generated file lives: `<repo>/docs/configuration.md` (same depth from src/ and dist/). */
export const DEFAULT_CONFIG_DOCS_PATH = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../../docs/configuration.md",
);

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

function defaultText(option: ConfigOption<unknown>): string {
  if (!option.hasDefaultValue || option.defaultValue === undefined) return "(none)";
  return `\`${option.formatValue(option.defaultValue)}\``;
}

function typeText(option: ConfigOption<unknown>): string {
  if (option.type === "enum" && option.enumValues !== undefined) {
    return `enum (${option.enumValues.map((v) => `\`${v}\``).join(", ")})`;
  }
  return option.type;
}

function descriptionText(option: ConfigOption<unknown>): string {
  const notes: string[] = [];
  const fallbacks = option.fallbackKeys.filter((f) => !f.isDeprecated);
  const deprecated = option.fallbackKeys.filter((f) => f.isDeprecated);
  const list = (keys: typeof option.fallbackKeys) =>
    keys
      .map(
        (f) =>
          `\`${f.key}\`${f.plainNumberUnit === undefined ? "" : ` (plain numbers in ${f.plainNumberUnit})`}`,
      )
      .join(", ");
  if (fallbacks.length > 0) notes.push(`Fallback keys: ${list(fallbacks)}.`);
  if (deprecated.length > 0) notes.push(`Deprecated keys: ${list(deprecated)}.`);
  return [option.description, ...notes].join(" ");
}

function groupSection(group: ConfigOptionGroup): string {
  const rows = group.options.map(
    (option) =>
      `| \`${option.key}\` | ${cell(typeText(option))} | ${cell(defaultText(option))} | ${cell(descriptionText(option))} |`,
  );
  return [
    `## ${group.title}`,
    "",
    group.description,
    "",
    "| Key | Type | Default | Description |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
  ].join("\n");
}

/** The Markdown of `docs/configuration.md` for `groups` (default: every Sluice option). */
export function generateConfigurationDocs(
  groups: readonly ConfigOptionGroup[] = CONFIG_OPTION_GROUPS,
): string {
  const header = [
    "# Configuration",
    "",
    "<!-- Generated from the ConfigOption definitions in packages/runtime-api/src/config/options/",
    "     by packages/runtime/src/tools/generate-config-docs.ts. Do not edit by hand: run",
    "     `pnpm docs:config`. A test fails when this file is stale. -->",
    "",
    "Sluice reads Flink's configuration keys. Put them in a `config.yaml` as flat dotted keys",
    "(`taskmanager.memory.segment-size: 32kb`) or nested maps (`taskmanager: { memory: ... }`),",
    "and override any of them on the command line with `-D key=value` (or `-Dkey=value`), which",
    "wins over the file. Keys no option knows are reported in one `SluiceConfigWarning`. An",
    "invalid value fails at start-up with `SLUICE_ERR_CONFIG`, naming the key, the value and",
    "what was expected.",
    "",
    "Value types:",
    "",
    "- **memory**: a whole number with an optional unit `b`, `k`/`kb`, `m`/`mb`, `g`/`gb`, `t`/`tb`",
    "  (binary: 1 kb = 1024 bytes; case-insensitive; spaces allowed). A plain number is bytes.",
    "- **duration**: a whole number with an optional unit `ns`, `us`, `ms`, `s`, `min` (or `m`),",
    "  `h`, `d` (long forms such as `seconds` work too). A plain number is milliseconds.",
    "- **integer**, **number**, **boolean** (`true`/`false`), **string**, **enum** (one of the",
    "  listed names, case-insensitive), **class** (a plugin reference `<module>#<export>`).",
    "",
    "A fallback key is read when the option's own key is not set; deprecated keys are Flink's",
    'older spellings and emit a warning when used. Descriptions that start with "Sluice:"',
    "belong to options Flink does not have.",
    "",
  ].join("\n");
  return `${header}\n${groups.map(groupSection).join("\n")}`;
}

/**
 * The command line: writes the docs file, or with `--check` compares it. Returns the exit code
 * (1 when `--check` finds the file stale or missing).
 */
export function runGenerateConfigDocs(args: readonly string[]): number {
  const check = args.includes("--check");
  const outIndex = args.indexOf("--out");
  const target =
    outIndex >= 0 && args[outIndex + 1] !== undefined
      ? path.resolve(args[outIndex + 1] as string)
      : DEFAULT_CONFIG_DOCS_PATH;
  const fresh = generateConfigurationDocs();
  if (check) {
    let current: string | undefined;
    try {
      current = readFileSync(target, "utf8");
    } catch (error) {
      // A missing file is stale; any other read failure is reported as itself.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      current = undefined;
    }
    if (current !== fresh) {
      process.stderr.write(`${target} is stale; run \`pnpm docs:config\` to regenerate it.\n`);
      return 1;
    }
    process.stdout.write(`${target} is up to date.\n`);
    return 0;
  }
  writeFileSync(target, fresh);
  process.stdout.write(`wrote ${target}\n`);
  return 0;
}

if (
  process.argv[1] !== undefined &&
  import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href
) {
  process.exitCode = runGenerateConfigDocs(process.argv.slice(2));
}
