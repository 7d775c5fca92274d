/**
 * Summarises `node --cpu-prof` profiles written by `pnpm bench -- --profile`: the top functions
 * by self time, and self time per package.
 *
 *   node bench/dist/profile-summary.js <dir or .cpuprofile>... [--top N]
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

function files(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    if (statSync(p).isDirectory()) {
      for (const entry of readdirSync(p)) out.push(...files([join(p, entry)]));
    } else if (p.endsWith(".cpuprofile")) {
      out.push(p);
    }
  }
  return out;
}

function shortUrl(url: string): string {
  return url
    .replace(/^file:\/\//, "")
    .replace(/^.*\/node_modules\/\.pnpm\/[^/]+\/node_modules\//, "")
    .replace(/^.*\/(packages|bench)\//, "$1/");
}

function packageOf(url: string): string {
  if (url === "") return "(native / gc / idle)";
  if (url.startsWith("node:")) return "node: core";
  const s = shortUrl(url);
  const m = /^(packages\/[^/]+|bench)/.exec(s);
  if (m !== null) return m[1] as string;
  const dep = /^(@[^/]+\/[^/]+|[^/]+)/.exec(s);
  return dep !== null ? (dep[1] as string) : s;
}

export function summarise(path: string, top: number): string {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const perPackage = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i] as number);
    const dt = profile.timeDeltas[i] ?? 0;
    if (node === undefined) continue;
    // Idle time is the event loop waiting (for I/O, or for this process's turn in an interleaved
    // run): percentages below are of busy time.
    if (node.callFrame.functionName === "(idle)") {
      idle += dt;
      continue;
    }
    total += dt;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || "(anonymous)"}  ${url === "" ? "" : `${shortUrl(url)}:${lineNumber + 1}`}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    const pkg = packageOf(url) === "(native / gc / idle)" ? `${functionName}` : packageOf(url);
    perPackage.set(pkg, (perPackage.get(pkg) ?? 0) + dt);
  }
  const pct = (v: number) => `${((v / total) * 100).toFixed(1).padStart(5)}%`;
  const lines = [
    `${path}: ${(total / 1000).toFixed(0)} ms busy, ${(idle / 1000).toFixed(0)} ms idle`,
    "  top self time (% of busy time):",
  ];
  for (const [key, v] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`  ${pct(v)}  ${key}`);
  }
  lines.push("  by package:");
  for (const [key, v] of [...perPackage.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    lines.push(`  ${pct(v)}  ${key}`);
  }
  return lines.join("\n");
}

function main(): void {
  const usage = "usage: node bench/dist/profile-summary.js <dir or .cpuprofile>... [--top N]";
  let parsed: { values: { top?: string | undefined }; positionals: string[] };
  try {
    parsed = parseArgs({ allowPositionals: true, options: { top: { type: "string" } } });
  } catch (error) {
    console.error(`error: ${(error as Error).message}\n${usage}`);
    process.exit(2);
  }
  const top = Number(parsed.values.top ?? 25);
  const paths = parsed.positionals;
  if (paths.length === 0 || !Number.isInteger(top) || top < 1) {
    console.error(usage);
    process.exit(2);
  }
  for (const file of files(paths)) console.log(`${summarise(file, top)}\n`);
}

main();
