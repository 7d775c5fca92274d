import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import {
  CONFIG_OPTION_GROUPS,
  type ConfigOption,
  type ConfigOptionGroup,
  MetricReporterOptions,
  readableConfigOf,
  ShuffleServiceOptions,
} from "@sluice/runtime-api";
import { loadShuffleServiceFactoryWithInfo } from "../loader/shuffle-service-loader.js";
import { loadMetricReporterFactory } from "../metrics/reporter-setup.js";

/**
 * Generates `docs/configuration.md` from the `ConfigOption` definitions of `@sluice/runtime-api`
 * (`CONFIG_OPTION_GROUPS`) and the options the bundled plugins declare
 * (`ShuffleServiceFactory.configOptions`, `MetricReporterFactory.configOptions`), so the
 * documentation cannot drift from the code.
 *
 *   node packages/runtime/dist/tools/generate-config-docs.js           # rewrite the file
 *   node packages/runtime/dist/tools/generate-config-docs.js --check   # exit 1 if it is stale
 *   ... --out <file>                                                    # another target file
 *   ... --plugin <module>#<Export>           # these shuffle plugins instead of the bundled ones
 */

/** The repository root (the same depth from src/tools and dist/tools). */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/** Where the generated file lives: `<repo>/docs/configuration.md`. */
export const DEFAULT_CONFIG_DOCS_PATH = path.join(REPO, "docs/configuration.md");

/** The plugins of this repository whose own options the docs list (as plugin references). */
export const BUNDLED_PLUGINS: readonly string[] = [
  `${path.join(REPO, "packages/shuffle-tcp")}#TcpShuffleServiceFactory`,
  `${path.join(REPO, "packages/shuffle-ws")}#WsShuffleServiceFactory`,
  `${path.join(REPO, "packages/shuffle-remote")}#RemoteShuffleServiceFactory`,
];

/** The metric reporters of this repository whose own options the docs list. */
export const BUNDLED_METRIC_REPORTERS: readonly string[] = [
  `${path.join(REPO, "packages/metrics-prometheus")}#PrometheusReporterFactory`,
];

/** The options a plugin declares, documented under its package's name. */
export interface PluginOptions {
  /** The plugin's package (`@sluice/shuffle-ws`), or its module file when it has none. */
  readonly packageName: string;
  /** The factory's export name. */
  readonly exportName: string;
  /** What the factory declares in `configOptions`, in its order. */
  readonly options: readonly ConfigOption<unknown>[];
  /** What the factory makes: which plugin setting makes its options apply. Default: `shuffle`. */
  readonly kind?: "shuffle" | "metric reporter";
}

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

/** The name in the nearest package.json above `file`, or `file` itself. */
function packageNameOf(file: string): string {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    let text: string;
    try {
      text = readFileSync(path.join(dir, "package.json"), "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw error;
    }
    const name = (JSON.parse(text) as { name?: unknown }).name;
    if (typeof name === "string") return name;
  }
  return file;
}

/**
 * Loads each plugin (a `shuffle-service-factory.class` value) through the runtime's loader and
 * returns the options it declares; plugins without options are left out.
 */
export async function loadPluginOptions(references: readonly string[]): Promise<PluginOptions[]> {
  const sections: PluginOptions[] = [];
  for (const reference of references) {
    const loaded = await loadShuffleServiceFactoryWithInfo(
      readableConfigOf({ [ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS.key]: reference }),
    );
    if (loaded.configOptions.length === 0) continue;
    sections.push({
      packageName: packageNameOf(loaded.file),
      exportName: loaded.exportName,
      options: loaded.configOptions,
    });
  }
  return sections;
}

/**
 * Loads each metric reporter factory (a `metrics.reporter.<name>.factory.class` value) through the
 * runtime's loader and returns the options it declares; factories without options are left out.
 */
export async function loadMetricReporterOptions(
  references: readonly string[],
): Promise<PluginOptions[]> {
  // Any reporter name does: the factory declares its options with the `<name>` placeholder.
  const name = "docs";
  const sections: PluginOptions[] = [];
  for (const reference of references) {
    const loaded = await loadMetricReporterFactory(
      readableConfigOf({ [MetricReporterOptions.factoryClass(name).key]: reference }),
      name,
    );
    const options = loaded.factory.configOptions ?? [];
    if (options.length === 0) continue;
    sections.push({
      packageName: packageNameOf(loaded.file),
      exportName: loaded.exportName,
      options,
      kind: "metric reporter",
    });
  }
  return sections;
}

function pluginGroup(plugin: PluginOptions): ConfigOptionGroup {
  return {
    title: `Plugin \`${plugin.packageName}\``,
    description:
      plugin.kind === "metric reporter"
        ? `Declared by \`${plugin.exportName}\`: read only by a reporter \`<name>\` whose \`metrics.reporter.<name>.factory.class\` is this factory, which checks them when it creates the reporter.`
        : `Declared by \`${plugin.exportName}\`: known, checked and read only when this plugin is the configured shuffle.`,
    options: plugin.options,
  };
}

/**
 * The Markdown of `docs/configuration.md` for `groups` (default: every Sluice option), then one
 * section per plugin of `plugins` with its own options.
 */
export function generateConfigurationDocs(
  groups: readonly ConfigOptionGroup[] = CONFIG_OPTION_GROUPS,
  plugins: readonly PluginOptions[] = [],
): string {
  const header = [
    "# Configuration",
    "",
    "<!-- Generated from the ConfigOption definitions in packages/runtime-api/src/config/options/",
    "     and the bundled plugins' configOptions by packages/runtime/src/tools/generate-config-docs.ts.",
    "     Do not edit by hand: run `pnpm docs:config`. A test fails when this file is stale. -->",
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
    "A shuffle plugin may declare options of its own (`ShuffleServiceFactory.configOptions`):",
    "once it is loaded, their keys are known and their values checked like Sluice's. So may a",
    "metric reporter (`MetricReporterFactory.configOptions`), under `metrics.reporter.<name>.`.",
    "The last sections list those of the bundled plugins.",
    "",
  ].join("\n");
  const sections = [...groups, ...plugins.map(pluginGroup)];
  return `${header}\n${sections.map(groupSection).join("\n")}`;
}

/**
 * The command line: writes the docs file, or with `--check` compares it. Resolves with the exit
 * code (1 when `--check` finds the file stale or missing).
 */
export async function runGenerateConfigDocs(args: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      check: { type: "boolean" },
      out: { type: "string" },
      plugin: { type: "string", multiple: true },
    },
  });
  const check = values.check === true;
  const target = values.out === undefined ? DEFAULT_CONFIG_DOCS_PATH : path.resolve(values.out);
  const fresh = generateConfigurationDocs(CONFIG_OPTION_GROUPS, [
    ...(await loadPluginOptions(values.plugin ?? BUNDLED_PLUGINS)),
    ...(await loadMetricReporterOptions(BUNDLED_METRIC_REPORTERS)),
  ]);
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
  runGenerateConfigDocs(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
