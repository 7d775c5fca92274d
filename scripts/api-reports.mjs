#!/usr/bin/env node
/**
 * API reports: one reviewed Markdown report per public entry point of every package under
 * packages/ (`packages/<name>/etc/<name>[-<subpath>].api.md`), written by API Extractor from the
 * built `.d.ts` files. `node scripts/api-reports.mjs` rewrites the reports after an intended
 * change of a public API; `--check` (CI) fails when a report differs from the API, so a change of
 * a public signature is always a visible diff in review. The tiers (`.`, `./plugin`, `./testing`)
 * each get their own report (docs/api-tiers.md).
 */
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Extractor, ExtractorConfig } from "@microsoft/api-extractor";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");

/** Every public entry point: its package folder, its `.d.ts` file and its report's name. */
function entryPoints() {
  const entries = [];
  for (const name of readdirSync(path.join(repo, "packages")).sort()) {
    const folder = path.join(repo, "packages", name);
    const manifest = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8"));
    if (manifest.private === true) continue;
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      if (target === null || typeof target.types !== "string") continue;
      const suffix = subpath === "." ? "" : `-${subpath.slice(2).replaceAll("/", "-")}`;
      entries.push({ folder, types: path.join(folder, target.types), report: `${name}${suffix}` });
    }
  }
  return entries;
}

let failed = 0;
for (const entry of entryPoints()) {
  mkdirSync(path.join(entry.folder, "etc"), { recursive: true });
  const config = ExtractorConfig.prepare({
    configObject: {
      projectFolder: entry.folder,
      mainEntryPointFilePath: entry.types,
      compiler: { tsconfigFilePath: path.join(entry.folder, "tsconfig.build.json") },
      apiReport: {
        enabled: true,
        reportFileName: `${entry.report}.api.md`,
        reportFolder: path.join(entry.folder, "etc"),
        reportTempFolder: path.join(entry.folder, "dist", "api-report"),
      },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: "warning" } },
        extractorMessageReporting: {
          default: { logLevel: "warning" },
          // Sluice marks its public surface by what the entry points export, not by release tags.
          "ae-missing-release-tag": { logLevel: "none" },
          // Members that implement a documented interface member inherit its TSDoc; TypeDoc's
          // run (`pnpm docs:api`) is what checks that every exported SPI member is documented.
          "ae-undocumented": { logLevel: "none" },
          // A type the API uses but no entry point exports is written into the report, where a
          // review sees it.
          "ae-forgotten-export": { logLevel: "none", addToApiReportFile: true },
          // TypeDoc (`pnpm docs:api`) resolves and checks the TSDoc links.
          "ae-unresolved-link": { logLevel: "none" },
        },
        tsdocMessageReporting: { default: { logLevel: "none" } },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: path.join(entry.folder, "package.json"),
  });
  const result = Extractor.invoke(config, {
    localBuild: !check,
    showVerboseMessages: false,
    // API Extractor's own progress lines (which TypeScript it bundles, which report it wrote):
    // the one line per report below says the same.
    messageCallback: (message) => {
      if (message.category === "console" && message.logLevel !== "error") message.logLevel = "none";
    },
  });
  const relative = path.relative(repo, path.join(entry.folder, "etc", `${entry.report}.api.md`));
  if (!result.succeeded) {
    failed++;
    console.error(`${relative}: API Extractor reported ${result.errorCount} errors`);
  } else if (check && result.apiReportChanged) {
    failed++;
    console.error(
      `${relative}: the public API differs from this report; if the change is intended, run ` +
        "`pnpm api:report` and commit the report (the new one is in dist/api-report/)",
    );
  } else {
    console.log(`${relative}: ${result.apiReportChanged ? "updated" : "unchanged"}`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
