import { spawn, type ChildProcess } from "node:child_process";
import type { Server } from "node:http";
import { writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI, { AuthenticationError, PermissionDeniedError, RateLimitError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { fakeOpenAIProvider, fakeProviderUsage, listenOnLoopback } from "../support/fake-openai-provider.js";

/**
 * Gateway keys end to end: a real `llmgw server` process, `llmgw ctl` for
 * keys and usage, the official openai client on /v1, and a local fake
 * provider behind two external models, which reports its own token usage.
 */
const { promptTokens, completionTokens } = fakeProviderUsage;

describe("gateway keys through llmgw server, ctl and the openai client", () => {
  let provider: Server;
  let server: ServerProcess;
  const ctl = (...args: string[]) => runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);
  const client = (apiKey: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
  const ask = (apiKey: string, model = "fake") => client(apiKey).chat.completions.create({ model, messages: [{ role: "user", content: "hello" }], max_tokens: 16 });

  async function createKey(...args: string[]): Promise<string> {
    const created = await ctl("key", "create", ...args);
    expect(created.code, created.stderr).toBe(0);
    const key = /^\s+(llmgw_key_\S+)$/m.exec(created.stdout)?.[1];
    expect(key, created.stdout).toBeDefined();
    return key as string;
  }

  beforeAll(async () => {
    provider = fakeOpenAIProvider();
    const port = await listenOnLoopback(provider);
    const folder = temporaryDirectory("llmgw-gateway-keys-");
    const config = path.join(folder, "server.yaml");
    writeFileSync(
      config,
      [
        "models:",
        "  - name: fake",
        "    aliases: [fake-chat]",
        `    external: { base_url: "http://127.0.0.1:${port}/v1" }`,
        "  - name: other",
        `    external: { base_url: "http://127.0.0.1:${port}/v1" }`,
        "",
      ].join("\n"),
    );
    server = await startServerProcess({ args: ["-c", config], dataDir: path.join(folder, "data") });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await new Promise((resolve) => provider?.close(resolve));
  });

  it("prints a key once, lists it without its value, and the key calls the gateway", async () => {
    const created = await ctl("key", "create", "data-team", "--models", "fake,fake-chat", "--rpm", "100", "--tpm", "100000", "--expires", "30d");
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('Created gateway key "data-team" (models: fake, fake-chat; rpm: 100; tpm: 100000; max in flight: the server\'s limits.requests_per_key; expires: ');
    const key = /^\s+(llmgw_key_\S+)$/m.exec(created.stdout)?.[1] as string;
    // A gateway that checks keys has nothing to warn of.
    expect(created.stdout).not.toContain("Note:");

    const answer = await ask(key, "fake-chat");
    expect(answer.choices[0]?.message.content).toBe("hi");

    const listed = await ctl("keys");
    expect(listed.stdout).toMatch(/^data-team\s+active\s+fake,fake-chat\s+100\s+100000\s+default\s+\d{4}-/m);
    expect(listed.stdout + (await ctl("keys", "--json")).stdout).not.toContain(key);
  });

  it("refuses a missing or unknown key, and an admin token, with 401; a gateway key never opens the admin API", async () => {
    const key = await createKey("apart");
    // The openai client refuses to send no key at all, so this one goes by fetch.
    const none = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "fake", messages: [{ role: "user", content: "Hi" }] }) });
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string; type: string } }).error).toMatchObject({ code: "missing_api_key", type: "invalid_request_error" });
    await expect(ask("llmgw_key_not-one-we-made")).rejects.toBeInstanceOf(AuthenticationError);
    const adminAsKey = await ask(server.token).catch((error: unknown) => error);
    expect(adminAsKey).toBeInstanceOf(AuthenticationError);
    expect((adminAsKey as AuthenticationError).message).toContain("admin-API token");

    const keyAsAdmin = await runCli(["ctl", "--server", server.url, "--token", key, "models"]);
    expect(keyAsAdmin.code).toBe(1);
    expect(keyAsAdmin.stderr).toContain("the bearer token is not one this server issued");
  });

  it("refuses a model outside the key's scope with 403, and lists only the allowed ones", async () => {
    const key = await createKey("scoped", "--models", "fake");
    const refused = await ask(key, "other").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PermissionDeniedError);
    expect((refused as PermissionDeniedError).code).toBe("model_not_allowed");
    expect((await client(key).models.list()).data.map((model) => model.id)).toEqual(["fake"]);
  });

  it("stops a revoked key at once and an expired key when its time has come", async () => {
    const revoked = await createKey("leaver");
    await ask(revoked);
    const revoke = await ctl("key", "revoke", "leaver");
    expect(revoke.stdout).toContain('Revoked gateway key "leaver"');
    const afterRevoke = await ask(revoked).catch((error: unknown) => error);
    expect(afterRevoke).toBeInstanceOf(AuthenticationError);
    expect((afterRevoke as AuthenticationError).message).toContain('"leaver" was revoked');

    const expiring = await createKey("trial", "--expires", "2s");
    await ask(expiring);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const afterExpiry = await ask(expiring).catch((error: unknown) => error);
    expect((afterExpiry as AuthenticationError).message).toContain('"trial" expired at');
    expect((await ctl("keys")).stdout).toMatch(/^leaver\s+revoked/m);
  });

  it("answers 429 with Retry-After past the requests per minute", async () => {
    const key = await createKey("slow", "--rpm", "2");
    await ask(key);
    await ask(key);
    const refused = await ask(key).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect((refused as RateLimitError).code).toBe("rate_limit_exceeded");
    expect(Number((refused as RateLimitError).headers?.get("retry-after"))).toBeGreaterThan(0);
  });

  it("counts usage on streams as the provider reported it, the client not having asked for usage", async () => {
    const key = await createKey("streamer");
    const streams = 3;
    for (let count = 0; count < streams; count += 1) {
      const stream = await client(key).chat.completions.create({ model: "fake", messages: [{ role: "user", content: "hello" }], max_tokens: 16, stream: true });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      // The gateway asked the provider for usage and kept it from a client that did not ask.
      expect(chunks.some((chunk) => chunk.usage)).toBe(false);
    }
    await ask(key);
    const usage = await ctl("usage", "--key", "streamer", "--json");
    const rows = (JSON.parse(usage.stdout) as { usage: { model: string; requests: number; errors: number; prompt_tokens: number; completion_tokens: number }[] }).usage;
    expect(rows).toEqual([
      expect.objectContaining({ model: "fake", requests: streams + 1, errors: 0, prompt_tokens: (streams + 1) * promptTokens, completion_tokens: (streams + 1) * completionTokens }),
    ]);
    const table = await ctl("usage", "--key", "streamer");
    expect(table.stdout).toMatch(/^streamer\s+fake\s+4\s+0\s+44\s+28$/m);
  });

  it("makes a key with its own cap on requests in flight, which ctl prints and lists; a key without one shows the server's", async () => {
    const created = await ctl("key", "create", "batch-job", "--max-in-flight", "1000");
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('Created gateway key "batch-job" (models: any; rpm: no limit; tpm: no limit; max in flight: 1000; expires: never).');
    await createKey("plain");
    const listed = (await ctl("keys")).stdout;
    expect(listed).toMatch(/^NAME\s+STATE\s+MODELS\s+RPM\s+TPM\s+MAX IN FLIGHT\s+EXPIRES\s+CREATED$/m);
    expect(listed).toMatch(/^batch-job\s+active\s+any\s+-\s+-\s+1000\s+-\s+\d{4}-/m);
    expect(listed).toMatch(/^plain\s+active\s+any\s+-\s+-\s+default\s+-\s+\d{4}-/m);
    const json = JSON.parse((await ctl("keys", "--json")).stdout) as { keys: { name: string; max_in_flight: number | null }[] };
    expect(json.keys.filter((key) => ["batch-job", "plain"].includes(key.name)).map((key) => key.max_in_flight)).toEqual([1000, null]);
    const plainCreated = await ctl("key", "create", "plain-two");
    expect(plainCreated.stdout).toContain("max in flight: the server's limits.requests_per_key;");
  });

  it("refuses bad key options in ctl, naming the option", async () => {
    const zero = await ctl("key", "create", "zero", "--rpm", "0");
    expect([zero.code, zero.stderr]).toEqual([1, expect.stringContaining('"0" is not a whole number of 1 or more.')]);
    const noSlots = await ctl("key", "create", "no-slots", "--max-in-flight", "0");
    expect([noSlots.code, noSlots.stderr]).toEqual([1, expect.stringContaining("option '--max-in-flight <n>' argument '0' is invalid. \"0\" is not a whole number from 1 to 1000000.")]);
    const tooMany = await ctl("key", "create", "too-many", "--max-in-flight", "1000001");
    expect(tooMany.stderr).toContain('"1000001" is more than 1000000, the most this takes.');
    expect((await ctl("keys")).stdout).not.toMatch(/^(no-slots|too-many)\s/m);
    const typo = await ctl("key", "create", "typo", "--models", "fak");
    expect(typo.stderr).toContain('"fak" (did you mean "fake"?) is not a model, alias or adapter');
    const ghost = await ctl("key", "revoke", "ghost");
    expect(ghost.stderr).toContain('no gateway key named "ghost"');
  });

  it("enforces the same keys on a standalone llmgw gateway, which sends its usage to the server", async () => {
    const key = await createKey("far-away", "--models", "fake");
    let output = "";
    const gateway: ChildProcess = spawn(process.execPath, [llmgwBin, "gateway", "--server", server.url, "--listen", "127.0.0.1:0"], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LLMGW_TOKEN: server.token, LLMGW_SERVER: undefined },
    });
    gateway.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    gateway.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      const url = await waitFor(async () => /listening on (http:\/\/[\d.:]+)/.exec(output)?.[1], 30_000, "the standalone gateway to listen");
      const remote = (apiKey: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
      const answer = await remote(key).chat.completions.create({ model: "fake", messages: [{ role: "user", content: "hello" }], max_tokens: 16 });
      expect(answer.choices[0]?.message.content).toBe("hi");
      const scoped = await remote(key).chat.completions.create({ model: "other", messages: [{ role: "user", content: "hello" }] }).catch((error: unknown) => error);
      expect(scoped).toBeInstanceOf(PermissionDeniedError);
      await expect(remote(server.token).models.list()).rejects.toBeInstanceOf(AuthenticationError);

      // Revoked on the server: the gateway re-reads the keys every 2 s.
      await ctl("key", "revoke", "far-away");
      await waitFor(
        async () => (await remote(key).chat.completions.create({ model: "fake", messages: [{ role: "user", content: "hello" }] }).catch((error: unknown) => error)) instanceof AuthenticationError,
        10_000,
        "the standalone gateway to refuse the revoked key",
        200,
      );
      // Its usage reaches the server's books within a batch (5 s); the refused requests count as errors.
      const rows = await waitFor(
        async () => {
          const usage = JSON.parse((await ctl("usage", "--key", "far-away", "--json")).stdout) as { usage: { model: string; requests: number; errors: number; prompt_tokens: number }[] };
          const refused = usage.usage.find((row) => row.model === "other");
          return usage.usage.some((row) => row.model === "fake") && refused ? usage.usage : undefined;
        },
        15_000,
        "the standalone gateway's usage on the server",
        500,
      );
      const fake = rows.find((row) => row.model === "fake");
      // The first answer, plus any the gateway still served before it re-read the keys.
      expect(fake?.prompt_tokens).toBe((fake?.requests ?? 0) * promptTokens);
      expect(rows.find((row) => row.model === "other")).toMatchObject({ requests: 1, errors: 1, prompt_tokens: 0 });
      expect(output).not.toContain(key);
    } finally {
      killGroup(gateway.pid);
    }
  });
});
