import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/fake-engine.js";
import { llmgwBin, runCli, startServerProcess, withoutLlmgwVariables, type ServerProcess } from "../support/processes.js";

/** Every face says which release it is, so an operator half-way through an upgrade can tell which machines are done. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const version = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version;

describe("llmgw's version on every face", () => {
  let server: ServerProcess;
  let gateway: ChildProcess | undefined;

  beforeAll(async () => {
    server = await startServerProcess();
  });

  afterAll(async () => {
    gateway?.kill("SIGKILL");
    await server?.stop();
  });

  it("is package.json's version, a real one", () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(version).not.toBe("0.0.0");
  });

  it.each([[["--version"]], [["-v"]], [["server", "--version"]], [["agent", "--version"]], [["gateway", "--version"]], [["demo", "--version"]], [["ctl", "--version"]]])("llmgw %j prints it", async (args) => {
    const result = await runCli(args);
    expect([result.code, result.stdout.trim()]).toEqual([0, version]);
  });

  it("is in the server's API and on every answer", async () => {
    const response = await fetch(`${server.url}/api/v1/version`);
    expect(((await response.json()) as { version: string }).version).toBe(version);
    expect(response.headers.get("llmgw-version")).toBe(version);
  });

  it("is in a standalone gateway's /healthz", async () => {
    let output = "";
    gateway = spawn(process.execPath, [llmgwBin, "gateway", "--listen", "127.0.0.1:0", "--auth", "open"], {
      env: { ...withoutLlmgwVariables(process.env), LLMGW_SERVER: server.url, LLMGW_TOKEN: server.token },
      stdio: ["ignore", "pipe", "pipe"],
    });
    gateway.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    gateway.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const url = await waitFor(() => /listening on (http:\/\/[\d.:]+)/.exec(output)?.[1], 30_000, "the gateway to listen");
    const health = (await (await fetch(`${url}/healthz`)).json()) as { status: string; version: string };
    expect(health).toMatchObject({ status: "ok", version });
  });
});
