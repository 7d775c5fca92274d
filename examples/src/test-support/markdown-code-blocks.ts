import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root folder. */
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** One fenced code block of a Markdown document. */
export interface CodeBlock {
  /** The document, relative to the repository (`docs/embedding.md`). */
  readonly document: string;
  /** The fence's language (`ts`, `json`, `yaml`, `sh`). */
  readonly language: string;
  /**
   * The file the block is, when the fence names one after the language (```` ```ts producer.ts ````):
   * such blocks together make up a runnable example.
   */
  readonly file: string | undefined;
  /** The line of the document where the block's first line of code is (1-based). */
  readonly line: number;
  readonly code: string;
}

/**
 * The fenced code blocks of `document` (relative to the repository), in order. An unclosed fence
 * fails, so a broken document cannot hide a block.
 */
export function codeBlocks(document: string): CodeBlock[] {
  const lines = readFileSync(path.join(REPO, document), "utf8").split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S+)(?:[ \t]+(\S+))?\s*$/.exec(lines[i] as string);
    if (open === null) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== "```") end++;
    if (end === lines.length) {
      throw new Error(`${document}:${i + 1}: the code block opened here is never closed`);
    }
    blocks.push({
      document,
      language: open[1] as string,
      file: open[2],
      line: start + 1,
      code: `${lines.slice(start, end).join("\n")}\n`,
    });
    i = end;
  }
  return blocks;
}
