import path from "node:path";
import ts from "typescript";
import { type CodeBlock, REPO } from "./markdown-code-blocks.js";

/** The compiler options of the embedding guide's `tsconfig.json` block: what an application uses. */
export function guideCompilerOptions(blocks: readonly CodeBlock[]): ts.CompilerOptions {
  const tsconfig = blocks.find((block) => block.file === "tsconfig.json");
  if (tsconfig === undefined) throw new Error("the embedding guide has no tsconfig.json block");
  const { compilerOptions } = JSON.parse(tsconfig.code) as { compilerOptions: unknown };
  const converted = ts.convertCompilerOptionsFromJson(compilerOptions, REPO);
  if (converted.errors.length > 0) {
    throw new Error(ts.formatDiagnostics(converted.errors, formatHost(REPO)));
  }
  const { outDir: _emitsNothing, ...checkOnly } = converted.options;
  return { ...checkOnly, noEmit: true };
}

/**
 * The files on disk that programs read (the libraries' and the packages' declarations), parsed
 * once per test file and shared by the programs, as TypeScript's document registry shares them:
 * each call builds a program of its own. Keyed by name and the options they were parsed with.
 */
const parsedFiles = new Map<string, ts.SourceFile | undefined>();

/**
 * Type-checks TypeScript code blocks as ES modules in `folder` (which must have a package.json with
 * `"type": "module"` and the packages they import in its node_modules), without writing them
 * anywhere. Returns the diagnostics, each placed at its line in the Markdown document.
 */
export function typeCheckBlocks(
  blocks: readonly CodeBlock[],
  folder: string,
  options: ts.CompilerOptions,
): string[] {
  const files = new Map<string, CodeBlock>();
  for (const [index, block] of blocks.entries()) {
    const name = block.file ?? `${path.basename(block.document, ".md")}-${index}.ts`;
    files.set(path.join(folder, "doc-snippets", name), block);
  }
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  const snippets = path.join(folder, "doc-snippets");
  host.getCurrentDirectory = () => folder;
  // The blocks' folder exists only here: a block may import another (`./ha-job.js`).
  host.directoryExists = (name) =>
    path.resolve(name) === snippets || (directoryExists?.call(host, name) ?? true);
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  // The blocks' folder exists only in memory: a block may import another (`./word-count.js`).
  host.directoryExists = (name) =>
    path.resolve(name) === snippets || (directoryExists?.call(host, name) ?? true);
  host.readFile = (name) => files.get(name)?.code ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const block = files.get(name);
    if (block !== undefined) return ts.createSourceFile(name, block.code, language);
    const key = `${name}\0${JSON.stringify(language)}`;
    if (!parsedFiles.has(key))
      parsedFiles.set(key, getSourceFile.call(host, name, language, ...rest));
    return parsedFiles.get(key);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
    const block = diagnostic.file === undefined ? undefined : files.get(diagnostic.file.fileName);
    if (block === undefined || diagnostic.start === undefined) return message;
    const { line } = diagnostic.file?.getLineAndCharacterOfPosition(diagnostic.start) ?? {
      line: 0,
    };
    return `${block.document}:${block.line + line}: ${message}`;
  });
}

function formatHost(cwd: string): ts.FormatDiagnosticsHost {
  return {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: () => cwd,
    getNewLine: () => "\n",
  };
}
