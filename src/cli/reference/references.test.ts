import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { packageRoot } from "../../package-root.js";
import { referencePaths, renderCtlReference, renderOpenApiReference } from "./render-references.js";

function committed(file: string): string {
  try {
    return readFileSync(path.join(packageRoot.directory, file), "utf8");
  } catch {
    return "";
  }
}

describe("the generated references", () => {
  it(`${referencePaths.ctl} is what the command tree says`, () => {
    expect(committed(referencePaths.ctl) === renderCtlReference(), `${referencePaths.ctl} is stale: run npm run docs and commit it`).toBe(true);
  });

  it(`${referencePaths.openapi} is what the server serves`, async () => {
    expect(committed(referencePaths.openapi) === (await renderOpenApiReference()), `${referencePaths.openapi} is stale: run npm run docs and commit it`).toBe(true);
  });

  it("the ctl reference names every command and option with its default", () => {
    const reference = renderCtlReference();
    expect(reference).toContain("## llmgw ctl");
    expect(reference).toContain("#### llmgw ctl model add");
    expect(reference).toMatch(/\| `--server <url>` \|[^\n]*\|/);
  });
});
