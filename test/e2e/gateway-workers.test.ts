import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import type { Server } from "node:http";
import path from "node:path";
import OpenAI, { RateLimitError } from "openai";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { fakeOpenAIProvider, fakeProviderUsage, listenOnLoopback } from "../support/fake-openai-provider.js";
import { llmgwBin, runCli, startServerProcess, withoutLlmgwVariables, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * `llmgw gateway --workers N`: several gateway processes behind one port, as
 * real processes (a server, a gateway primary and its workers, a local fake
 * provider), called with the openai client. Each call opens its own
 * connection, and the primary hands connections to the workers in turn, so
 * consecutive calls land on different workers: a limit kept per worker would
 * let twice as many through.
 */
/** The pids of a process's children, from /proc (the workers of a gateway's primary). */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("a gateway with several workers", () => {
  let provider: Server;
  let server: ServerProcess;
  const ctl = (...args: string[]) => runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);

  async function createKey(...args: string[]): Promise<string> {
    const created = await ctl("key", "create", ...args);
    expect(created.code, created.stderr).toBe(0);
    return /^\s+(llmgw_key_\S+)$/m.exec(created.stdout)?.[1] as string;
  }

  /** Starts `llmgw gateway --workers N` in its own process group; resolves once the primary says where it listens. */
  async function startWorkers(workers: string): Promise<{ child: ChildProcess; url: string; output: () => string }> {
    let output = "";
    const child = spawn(process.execPath, [llmgwBin, "gateway", "--server", server.url, "--listen", "127.0.0.1:0", "--workers", workers], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...withoutLlmgwVariables(process.env), LLMGW_TOKEN: server.token },
    });
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const url = await waitFor(async () => /listening on (http:\/\/[\d.:]+) with \d+ workers/.exec(output)?.[1], 30_000, "the gateway's workers to listen");
    return { child, url, output: () => output };
  }

  /** An openai client whose every call opens a connection of its own (and closes it after). */
  const freshConnections = (url: string, apiKey: string) =>
    new OpenAI({
      baseURL: `${url}/v1`,
      apiKey,
      maxRetries: 0,
      fetch: async (input, init) => {
        const agent = new Agent({ connections: 1 });
        try {
          const answer = await undiciFetch(input as string, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent });
          const body = await answer.arrayBuffer();
          return new Response(body, { status: answer.status, headers: answer.headers as unknown as Headers });
        } finally {
          await agent.close();
        }
      },
    });

  const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", (code) => resolve(code))));

  beforeAll(async () => {
    provider = fakeOpenAIProvider({ slowMs: 1500 });
    const port = await listenOnLoopback(provider);
    const folder = temporaryDirectory("llmgw-gateway-workers-");
    const config = path.join(folder, "server.yaml");
    writeFileSync(config, ["models:", "  - name: fake", `    external: { base_url: "http://127.0.0.1:${port}/v1" }`, "  - name: slow", `    external: { base_url: "http://127.0.0.1:${port}/v1" }`, ""].join("\n"));
    server = await startServerProcess({ args: ["-c", config], dataDir: path.join(folder, "data") });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await new Promise<void>((resolve) => provider?.close(() => resolve()));
  });

  it("holds a key's --rpm across all workers, and their usage adds up on the server after a SIGTERM", async () => {
    const key = await createKey("shared", "--rpm", "6");
    const gateway = await startWorkers("2");
    try {
      const client = freshConnections(gateway.url, key);
      const outcomes: string[] = [];
      for (let call = 0; call < 12; call += 1) {
        const answer = await client.chat.completions.create({ model: "fake", messages: [{ role: "user", content: "hello" }], max_tokens: 16 }).catch((error: unknown) => error);
        if (answer instanceof RateLimitError) {
          outcomes.push("429");
          expect(answer.message).toContain('API key "shared" has used its 6 requests per minute');
          expect(Number(answer.headers?.get("retry-after"))).toBeGreaterThan(0);
        } else {
          outcomes.push((answer as OpenAI.ChatCompletion).choices[0]?.message.content ?? String(answer));
        }
      }
      // Six in total: the first six, whichever worker took them; every one after is refused.
      expect(outcomes).toEqual([...Array<string>(6).fill("hi"), ...Array<string>(6).fill("429")]);

      // A scrape reaches one worker, which answers for all: two scrapes (two workers) read the same totals.
      for (let scrape = 0; scrape < 2; scrape += 1) {
        const agent = new Agent({ connections: 1 });
        const text = await (await undiciFetch(`${gateway.url}/metrics`, { dispatcher: agent })).text();
        await agent.close();
        expect(text).toContain('llmgw_gateway_requests_total{model="fake",status="200"} 6');
        expect(text).toContain('llmgw_gateway_requests_total{model="fake",status="429"} 6');
      }

      gateway.child.kill("SIGTERM");
      expect(await exited(gateway.child)).toBe(0);
      // Each worker sent what it counted before it exited: no batch waits for a timer.
      const usage = JSON.parse((await ctl("usage", "--key", "shared", "--json")).stdout) as { usage: { model: string; requests: number; errors: number; prompt_tokens: number; completion_tokens: number }[] };
      expect(usage.usage).toEqual([
        expect.objectContaining({ model: "fake", requests: 12, errors: 6, prompt_tokens: 6 * fakeProviderUsage.promptTokens, completion_tokens: 6 * fakeProviderUsage.completionTokens }),
      ]);
    } finally {
      killGroup(gateway.child.pid);
    }
  }, 60_000);

  it("finishes the requests every worker is answering when the primary gets SIGTERM, then exits", async () => {
    const key = await createKey("draining");
    const gateway = await startWorkers("2");
    try {
      const client = freshConnections(gateway.url, key);
      let reachedProvider = 0;
      const count = () => (reachedProvider += 1);
      provider.on("request", count);
      const slow = [0, 1, 2, 3].map(() => client.chat.completions.create({ model: "slow", messages: [{ role: "user", content: "take your time" }] }));
      // All four are with the provider (1.5 s each) before the signal: a worker is answering each. A fixed pause
      // was not enough on a loaded machine, where a request could still wait in the listen queue at the signal.
      await waitFor(() => reachedProvider >= 4, 10_000, "the four requests to reach the provider");
      provider.off("request", count);
      gateway.child.kill("SIGTERM");
      const answers = await Promise.all(slow);
      expect(answers.map((answer) => answer.choices[0]?.message.content)).toEqual(["hi", "hi", "hi", "hi"]);
      expect(await exited(gateway.child)).toBe(0);
      await expect(client.models.list()).rejects.toThrow(/Connection error|ECONNREFUSED|fetch failed/);
    } finally {
      killGroup(gateway.child.pid);
    }
  }, 60_000);

  it("starts another worker when one dies, and keeps answering meanwhile", async () => {
    const key = await createKey("steady");
    const gateway = await startWorkers("2");
    try {
      // A worker that dies within 5 s of its start is not restarted (that would repeat): wait that out first.
      await new Promise((resolve) => setTimeout(resolve, 5500));
      const workers = childrenOf(gateway.child.pid as number);
      expect(workers).toHaveLength(2);
      process.kill(workers[0] as number, "SIGKILL");
      await waitFor(() => /exited \(SIGKILL\); starting another/.test(gateway.output()), 10_000, "the primary to start another worker");
      await waitFor(() => childrenOf(gateway.child.pid as number).length === 2, 30_000, "the new worker to run");
      // Every worker, the replacement too, runs with the young generation sized for serving, on any Node.
      for (const worker of childrenOf(gateway.child.pid as number)) {
        expect(readFileSync(`/proc/${worker}/cmdline`, "utf8").split("\0")).toEqual(expect.arrayContaining(["--min-semi-space-size=16", "--max-semi-space-size=16"]));
      }
      const client = freshConnections(gateway.url, key);
      for (let call = 0; call < 4; call += 1) {
        const answer = await client.chat.completions.create({ model: "fake", messages: [{ role: "user", content: "still there?" }] });
        expect(answer.choices[0]?.message.content).toBe("hi");
      }
    } finally {
      killGroup(gateway.child.pid);
    }
  }, 60_000);

  it("takes its workers with it when the primary is killed with SIGKILL", async () => {
    const gateway = await startWorkers("2");
    try {
      const workers = childrenOf(gateway.child.pid as number);
      expect(workers).toHaveLength(2);
      process.kill(gateway.child.pid as number, "SIGKILL");
      // A worker's channel to its primary closes with it, whatever killed it: each worker drains and exits.
      await waitFor(() => workers.every((pid) => !existsSync(`/proc/${pid}`) || readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z")), 20_000, "the workers to exit");
    } finally {
      killGroup(gateway.child.pid);
    }
  }, 60_000);

  it("exits with the workers' own error when they cannot listen (one process alike)", async () => {
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      for (const workers of ["2", "1"]) {
        const run = await runCli(["gateway", "--server", server.url, "--token", server.token, "--listen", `127.0.0.1:${port}`, "--workers", workers]);
        expect(run.code).toBe(1);
        expect(run.stderr).toContain(`cannot listen on 127.0.0.1:${port}: another process already listens there`);
        expect(run.stdout).not.toContain("listening on");
      }
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  }, 60_000);

  it("refuses a --workers that is not a count, naming the option", async () => {
    for (const workers of ["0", "two", "1000"]) {
      const run = await runCli(["gateway", "--server", server.url, "--token", server.token, "--listen", "127.0.0.1:0", "--workers", workers]);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`--workers ${workers}: expected a whole number from 1 to 256, or auto`);
    }
  });

  it("refuses a --usage-sync (or LLMGW_USAGE_SYNC) it does not know, naming where it came from and both choices", async () => {
    const flag = await runCli(["gateway", "--server", server.url, "--token", server.token, "--listen", "127.0.0.1:0", "--usage-sync", "fsync"]);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain("--usage-sync fsync: expected write or disk");
    const variable = await runCli(["gateway", "--server", server.url, "--token", server.token, "--listen", "127.0.0.1:0"], { env: { LLMGW_USAGE_SYNC: "never" } });
    expect(variable.code).toBe(1);
    expect(variable.stderr).toContain("LLMGW_USAGE_SYNC never: expected write or disk");
  });
});
