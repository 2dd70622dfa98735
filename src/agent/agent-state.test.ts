import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readAgentState } from "./agent-state.js";

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-agent-state-"));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe("readAgentState", () => {
  it("names a damaged state file and says to move it aside", async () => {
    const file = path.join(directory, "agent-state.json");
    await writeFile(file, '{"version": 1, "server_url": "http://control:8080", "repl');
    await expect(readAgentState(file)).rejects.toMatchObject({
      code: "config_invalid",
      message: expect.stringContaining(`${file} is not JSON`),
      hint: expect.stringContaining("Move the file aside"),
    });
  });

  it("reads no state where there is no file", async () => {
    expect(await readAgentState(path.join(directory, "absent.json"))).toBeUndefined();
  });
});
