import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { anchor } from "../../src/cli/reference/ctl-reference.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function markdownFiles(): string[] {
  const docs = readdirSync(path.join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md"))
    .map((name) => path.join("docs", name));
  return ["README.md", ...docs];
}


function anchorsOf(file: string): Set<string> {
  const text = readFileSync(path.join(root, file), "utf8").replace(/^```[\s\S]*?^```/gm, "");
  return new Set([...text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map((match) => anchor(match[1] as string)));
}

/** Relative links outside code: [text](target), skipping URLs with a scheme. */
function relativeLinks(file: string): string[] {
  const text = readFileSync(path.join(root, file), "utf8").replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string).filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe("relative links in the README and docs/", () => {
  it.each(markdownFiles())("%s links only to files and headings that exist", (file) => {
    const broken: string[] = [];
    for (const link of relativeLinks(file)) {
      const [target = "", fragment] = link.split("#");
      const resolved = target === "" ? file : path.normalize(path.join(path.dirname(file), target));
      if (!existsSync(path.join(root, resolved))) {
        broken.push(`${link}: no file ${resolved}`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith(".md") && !anchorsOf(resolved).has(fragment)) broken.push(`${link}: no heading #${fragment} in ${resolved}`);
    }
    expect(broken, `broken links in ${file}`).toEqual([]);
  });
});
