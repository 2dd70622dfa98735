import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Command } from "commander";
import pino from "pino";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { FakeControlPlane } from "../../test/support/fake-control-plane.js";
import { registerAgentCommand } from "./agent-command.js";

let directory: string;
let controlPlane: FakeControlPlane;
const saved = process.env.LLMGW_JOIN_TOKEN;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-agent-command-"));
  controlPlane = new FakeControlPlane();
  await controlPlane.start();
});

afterEach(async () => {
  vi.restoreAllMocks();
  if (saved === undefined) delete process.env.LLMGW_JOIN_TOKEN;
  else process.env.LLMGW_JOIN_TOKEN = saved;
  await controlPlane.stop();
  await rm(directory, { recursive: true, force: true });
});

it("takes the join token from LLMGW_JOIN_TOKEN and removes it from its environment, so no child inherits it", async () => {
  // A token the server refuses: the command then stops, and its message shows the token was sent.
  process.env.LLMGW_JOIN_TOKEN = "llmgw_join_from-environment";
  const stderr: string[] = [];
  vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => stderr.push(String(chunk)) > 0);
  vi.spyOn(process, "exit").mockImplementation((code?: string | number | null) => {
    throw new Error(`exit ${code ?? ""}`);
  });
  const program = new Command("llmgw").exitOverride();
  registerAgentCommand(program, { simulate: "1xH100-80GB@nvl0,cpu:4c/16g", logger: pino({ level: "silent" }) });
  await expect(program.parseAsync(["node", "llmgw", "agent", "--server", controlPlane.url, "--name", "node-env", "--data-dir", path.join(directory, "data")])).rejects.toThrow("exit 1");
  expect(stderr.join("")).toContain("refused agent node-env's join: unknown join token");
  expect(process.env.LLMGW_JOIN_TOKEN).toBeUndefined();
});
