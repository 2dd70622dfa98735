import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { fakeOpenAIProvider, fakeProviderUsage, listenOnLoopback } from "../support/fake-openai-provider.js";
import { llmgwBin, runCli, startServerProcess, withoutLlmgwVariables, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * Usage survives a kill -9: a server (and a gateway of two workers) is
 * killed under a steady load, started again on the same data, and every
 * request whose answer the client had in full is in `ctl usage`. The load is
 * bounded: a few loops of the official openai client, half of them
 * streaming, killed once a fixed number of answers have arrived.
 */

interface Load {
  /** Requests whose whole answer the client read (a stream to its end). */
  readonly answered: number;
  /** Requests sent, answered or not. */
  readonly sent: number;
}

/** Runs `loops` clients until `kill` has been called, which happens once `answersBeforeKill` answers are in. */
async function loadUntilKilled(baseURL: string, apiKey: string, answersBeforeKill: number, kill: () => void): Promise<Load> {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0, timeout: 10_000 });
  let answered = 0;
  let sent = 0;
  let killed = false;
  const loop = async (index: number): Promise<void> => {
    for (let call = 0; !killed; call += 1) {
      sent += 1;
      try {
        if ((index + call) % 2 === 0) {
          const stream = await client.chat.completions.create({ model: "fake", messages: [{ role: "user", content: "stream it" }], stream: true });
          let text = "";
          for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
          if (text !== "hi") throw new Error(`a stream cut short: ${text}`);
        } else {
          const answer = await client.chat.completions.create({ model: "fake", messages: [{ role: "user", content: "answer it" }] });
          if (answer.choices[0]?.message.content !== "hi") throw new Error("not the answer");
        }
        answered += 1;
        if (answered === answersBeforeKill) {
          killed = true;
          kill();
        }
      } catch (error) {
        // The kill cuts what is in flight; those answers were not had, so their usage may or may not be counted.
        if (!killed) throw new Error(`a request failed before the kill: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all([0, 1, 2, 3, 4, 5].map(loop));
  return { answered, sent };
}

type UsageRows = { usage: { key: string; model: string; requests: number; prompt_tokens: number }[] };

describe("usage after a kill -9", () => {
  let provider: Server;
  let folder: string;
  let config: string;

  beforeAll(async () => {
    provider = fakeOpenAIProvider();
    const port = await listenOnLoopback(provider);
    folder = temporaryDirectory("llmgw-usage-crash-");
    config = path.join(folder, "server.yaml");
    writeFileSync(config, ["models:", "  - name: fake", `    external: { base_url: "http://127.0.0.1:${port}/v1" }`, ""].join("\n"));
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => provider?.close(() => resolve()));
  });

  const usageOf = async (server: Pick<ServerProcess, "url" | "token">, key: string): Promise<{ requests: number; promptTokens: number }> => {
    const run = await runCli(["ctl", "--server", server.url, "--token", server.token, "usage", "--key", key, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const rows = (JSON.parse(run.stdout) as UsageRows).usage;
    return { requests: rows.reduce((sum, row) => sum + row.requests, 0), promptTokens: rows.reduce((sum, row) => sum + row.prompt_tokens, 0) };
  };

  const exited = (child: ChildProcess) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve())));

  it("loses no answered request's usage when the server is killed, and counts none that was not sent", async () => {
    const dataDir = path.join(folder, "server-data");
    let server = await startServerProcess({ args: ["-c", config], dataDir });
    try {
      const created = await runCli(["ctl", "--server", server.url, "--token", server.token, "key", "create", "crash"]);
      const key = /^\s+(llmgw_key_\S+)$/m.exec(created.stdout)?.[1] as string;
      const load = await loadUntilKilled(server.url, key, 60, () => server.child.kill("SIGKILL"));
      await exited(server.child);
      server = await startServerProcess({ args: ["-c", config], dataDir });
      const usage = await usageOf(server, "crash");
      expect(usage.requests).toBeGreaterThanOrEqual(load.answered);
      expect(usage.requests).toBeLessThanOrEqual(load.sent);
      expect(usage.promptTokens).toBeGreaterThanOrEqual(load.answered * fakeProviderUsage.promptTokens);
      // What the killed server left was adopted and written: only the new process's own segment is there.
      expect(readdirSync(path.join(dataDir, "usage-journal")).filter((name) => !name.startsWith(`usage-${server.child.pid}-`))).toEqual([]);
    } finally {
      await server.stop();
    }
  }, 240_000);

  // The server above runs with the default (usage written, not synced: the kernel has it, and a kill of the process loses none); this gateway syncs too.
  it("loses none when a gateway of two workers is killed, once it is started again on its journal (--usage-sync disk)", async () => {
    const server = await startServerProcess({ args: ["-c", config], dataDir: path.join(folder, "gateway-server-data") });
    const journal = path.join(folder, "gateway-journal");
    const startGateway = async (): Promise<{ child: ChildProcess; url: string }> => {
      let output = "";
      const child = spawn(process.execPath, [llmgwBin, "gateway", "--server", server.url, "--listen", "127.0.0.1:0", "--workers", "2", "--usage-journal", journal, "--usage-sync", "disk"], {
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...withoutLlmgwVariables(process.env), LLMGW_TOKEN: server.token },
      });
      child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const url = await waitFor(async () => /listening on (http:\/\/[\d.:]+) with 2 workers/.exec(output)?.[1], 90_000, "the gateway's workers to listen").catch((error: unknown) => {
        killGroup(child.pid);
        throw new Error(`${(error as Error).message}:\n${output}`);
      });
      return { child, url };
    };
    // Made before the gateway starts, which reads the keys then (and every 2 s after).
    const created = await runCli(["ctl", "--server", server.url, "--token", server.token, "key", "create", "workers-crash"]);
    const key = /^\s+(llmgw_key_\S+)$/m.exec(created.stdout)?.[1] as string;
    let gateway = await startGateway();
    try {
      // The primary and both workers at once, as a machine's OOM killer or a kill -9 of the group would.
      const load = await loadUntilKilled(gateway.url, key, 60, () => killGroup(gateway.child.pid));
      await exited(gateway.child);
      gateway = await startGateway();
      // Each worker adopts what it finds before it listens and writes it at once.
      const usage = await usageOf(server, "workers-crash");
      expect(usage.requests).toBeGreaterThanOrEqual(load.answered);
      expect(usage.requests).toBeLessThanOrEqual(load.sent);
    } finally {
      killGroup(gateway.child.pid);
      await server.stop();
    }
  }, 240_000);
});
