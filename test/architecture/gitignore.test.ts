import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { defaultDataDir } from "../../src/catalog/server-defaults.js";
import { defaultAgentDataDir } from "../../src/cli/agent-command.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Whether git would leave this path of the clone out of `git status` and `git add -A`. */
function ignored(relative: string): boolean {
  try {
    execFileSync("git", ["check-ignore", "--quiet", "--no-index", relative], { cwd: root });
    return true;
  } catch {
    return false;
  }
}

describe("the folders the printed lines make inside a clone", () => {
  // `npx llmgw server` and the agent line it prints, pasted in the clone, make these in its root.
  it.each([
    ["the server's default data directory", defaultDataDir],
    ["the agent's default data directory", defaultAgentDataDir],
  ])("are ignored by git: %s", (_what, folder) => {
    expect(ignored(path.join(folder, "state.json"))).toBe(true);
  });

  it("while the sources are not", () => {
    expect(ignored("src/cli/main.ts")).toBe(false);
  });
});
