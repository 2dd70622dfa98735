import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * docs/ARCHITECTURE.md is where a newcomer learns the tree, so it must name
 * what is there and nothing that is not: a file moved or a folder added
 * without the page following fails here, naming what to write down or fix.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const src = path.join(root, "src");
const page = "docs/ARCHITECTURE.md";
const text = readFileSync(path.join(root, page), "utf8");

/** The fenced block that draws src/: its first line is `src/`. */
function treeBlock(): string[] {
  const block = [...text.matchAll(/^```\n([\s\S]*?)^```/gm)].map((match) => match[1] as string).find((body) => body.startsWith("src/\n"));
  if (block === undefined) throw new Error(`${page} has no fenced block starting with the line "src/" that draws the folders`);
  return block.split("\n").slice(1);
}

/**
 * The entries the tree names, as paths under src/: a line indented two
 * spaces names a top-level entry, four spaces one inside the last top-level
 * folder, six one inside the last second-level folder. The entry is the
 * line's first word; a folder ends in "/".
 */
function treeEntries(): string[] {
  const entries: string[] = [];
  const parents: string[] = [];
  for (const line of treeBlock()) {
    const match = /^( +)(\S+)/.exec(line);
    if (match === null) continue;
    const depth = (match[1] as string).length / 2 - 1;
    if (!Number.isInteger(depth) || depth < 0 || depth > parents.length) continue;
    const name = match[2] as string;
    parents.length = depth;
    const entry = [...parents, name].join("");
    entries.push(entry);
    if (name.endsWith("/")) parents.push(name);
  }
  return entries;
}

/** What is in src/ that the tree must name: every top-level folder and source file, and every folder one level down. */
function sourceEntries(): string[] {
  const entries: string[] = [];
  for (const name of readdirSync(src).sort()) {
    const full = path.join(src, name);
    if (statSync(full).isDirectory()) {
      entries.push(`${name}/`);
      for (const child of readdirSync(full).sort()) if (statSync(path.join(full, child)).isDirectory()) entries.push(`${name}/${child}/`);
    } else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) entries.push(name);
  }
  return entries;
}

/** Every source file's path under src/, to find the home of a file the page names by its name alone. */
function sourceFiles(): string[] {
  return readdirSync(src, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".ts") || name.endsWith(".tsx"));
}

/** `code` spans outside fenced blocks that name a TypeScript file or a folder of the tree (`gateway/translate/`). */
function namedPaths(): string[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, "");
  return [...prose.matchAll(/`([^`\n]+)`/g)]
    .map((match) => match[1] as string)
    .filter((span) => /^[\w.-]+(\/[\w.-]+)*\.tsx?$/.test(span) || /^[a-z][\w-]*(\/[\w-]+)*\/$/.test(span));
}

/** A named path resolves against src/ (`store/open-store.ts`), the repository (`test/...`, `src/...`), or, a bare file name, anywhere in src/. */
function resolves(named: string, files: readonly string[]): boolean {
  if (existsSync(path.join(src, named)) || existsSync(path.join(root, named))) return true;
  return !named.includes("/") && files.some((file) => path.basename(file) === named);
}

describe(page, () => {
  it("draws every folder of src/ (and the folders one level inside), and every file at its top", () => {
    const drawn = new Set(treeEntries());
    const missing = sourceEntries().filter((entry) => !drawn.has(entry));
    expect(missing, `src/ has these, which the folder drawing in ${page} does not name: add a line for each, saying what it holds`).toEqual([]);
  });

  it("draws nothing that is not in src/", () => {
    const gone = treeEntries().filter((entry) => !existsSync(path.join(src, entry)));
    expect(gone, `the folder drawing in ${page} names these, which src/ does not have: remove or rename them`).toEqual([]);
  });

  it("names only files and folders that exist", () => {
    const files = sourceFiles();
    const gone = [...new Set(namedPaths())].filter((named) => !resolves(named, files));
    expect(gone, `${page} names these, which exist neither under src/ nor from the repository's root: point each at where it lives now`).toEqual([]);
  });
});
