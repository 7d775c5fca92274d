// Builds the dashboard page (src/dashboard/page) into dist/dashboard/static: one bundle with uPlot
// and its stylesheet, so the page needs no network access. Run by `pnpm build` after tsc.
import { copyFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const app = path.dirname(fileURLToPath(import.meta.url));
const page = path.join(app, "src/dashboard/page");
const out = path.join(app, "dist/dashboard/static");

mkdirSync(out, { recursive: true });
await build({
  entryPoints: { app: path.join(page, "main.ts") },
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  minify: true,
  sourcemap: true,
  outdir: out,
  logLevel: "warning",
});
copyFileSync(path.join(page, "index.html"), path.join(out, "index.html"));
copyFileSync(path.join(page, "favicon.svg"), path.join(out, "favicon.svg"));
