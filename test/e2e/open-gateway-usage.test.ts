import { writeFileSync } from "node:fs";
import type { Server } from "node:http";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeOpenAIProvider, fakeProviderUsage, listenOnLoopback } from "../support/fake-openai-provider.js";
import { runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/** An open gateway (no keys checked, as in the demo) still counts what it served, by model, under the anonymous caller. */
describe("usage on an open gateway", () => {
  let provider: Server;
  let server: ServerProcess;

  beforeAll(async () => {
    provider = fakeOpenAIProvider();
    const port = await listenOnLoopback(provider);
    const folder = temporaryDirectory("llmgw-open-usage-");
    const config = path.join(folder, "server.yaml");
    writeFileSync(config, ["gateway: { auth: open }", "models:", "  - name: fake", `    external: { base_url: "http://127.0.0.1:${port}/v1" }`, ""].join("\n"));
    server = await startServerProcess({ args: ["-c", config], dataDir: path.join(folder, "data") });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await new Promise<void>((resolve) => provider?.close(() => resolve()));
  });

  it("shows in `ctl usage` every request served, under (anonymous), with the engine's tokens", async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "not-checked", maxRetries: 0 });
    for (let call = 0; call < 3; call += 1) await client.chat.completions.create({ model: "fake", messages: [{ role: "user", content: "hello" }] });
    const run = await runCli(["ctl", "--server", server.url, "--token", server.token, "usage"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^\\(anonymous\\)\\s+fake\\s+3\\s+0\\s+${3 * fakeProviderUsage.promptTokens}\\s+${3 * fakeProviderUsage.completionTokens}\\s*$`, "m"));
  }, 60_000);
});
