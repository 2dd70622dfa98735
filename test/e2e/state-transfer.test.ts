import type { Server } from "node:http";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ctlAgainst, ctlOutput, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { fakeOpenAIProvider, fakeProviderUsage, listenOnLoopback } from "../support/fake-openai-provider.js";

/**
 * The state kept and moved, end to end: `ctl export` from one real server,
 * `ctl import` into a fresh one, `ctl backup` of a server under use and a
 * server started on the copy. External models behind a local fake provider
 * stand for the catalog (nothing to place), a gateway key spends usage.
 */
describe("ctl export, import and backup between real servers", () => {
  let provider: Server;
  let port = 0;
  let folder = "";
  let source: ServerProcess;
  const servers: ServerProcess[] = [];
  const start = async (name: string, dataDir = path.join(folder, name)) => {
    const config = path.join(folder, `${name}.yaml`);
    writeFileSync(config, ["models:", "  - name: declared", `    external: { base_url: "http://127.0.0.1:${port}/v1" }`, ""].join("\n"));
    const server = await startServerProcess({ args: ["-c", config], dataDir });
    servers.push(server);
    return server;
  };
  /** Setup through the admin API itself: quicker than a ctl process per step on a busy machine; the commands under test go through ctl. */
  const admin = async (server: Pick<ServerProcess, "url" | "token">, method: string, route: string, body?: unknown): Promise<unknown> => {
    const answer = await fetch(`${server.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${server.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await answer.text();
    if (answer.status >= 300) throw new Error(`${method} ${route}: ${answer.status} ${text}`);
    return JSON.parse(text) as unknown;
  };
  const external = () => ({ base_url: `http://127.0.0.1:${port}/v1` });
  beforeAll(async () => {
    provider = fakeOpenAIProvider();
    port = await listenOnLoopback(provider);
    folder = temporaryDirectory("llmgw-state-");
    source = await start("source");
    await admin(source, "POST", "/api/v1/models", { name: "chat", external: external(), class: "critical", owner: "search-team", aliases: ["chat-latest"], fallbacks: ["declared"] });
    await admin(source, "POST", "/api/v1/models", { name: "summary", external: external(), queue_timeout: "30s" });
    await admin(source, "POST", "/api/v1/keys", { name: "data-team", models: ["chat", "chat-latest"], rpm: 100, tpm: 5000, max_in_flight: 1000 });
    await admin(source, "POST", "/api/v1/keys", { name: "old-team" });
    await admin(source, "DELETE", "/api/v1/keys/old-team");
    await admin(source, "POST", "/api/v1/tokens", { name: "grafana", role: "read" });
    await admin(source, "POST", "/api/v1/tokens", { name: "ci-bot", role: "admin" });
  }, 180_000);

  afterAll(async () => {
    for (const server of servers) await server.stop();
    await new Promise((resolve) => provider?.close(resolve));
  });
  // Each test starts a server and runs a few ctl processes: roomy on a shared machine, not a race.
  const roomy = 180_000;

  it("exports runtime models, keys and tokens without a secret, and a round trip through a fresh server exports the same", async () => {
    const exported = await ctlOutput(source, ["export"]);
    expect(exported).toMatch(/^# The runtime state of an llmgw server/);
    expect(exported).toContain("Models declared in a server.yaml are not here");
    expect(exported).toContain("name: chat");
    expect(exported).toContain("owner: search-team");
    // A key's own cap on requests in flight travels with it (the round trip below exports it again).
    expect(exported).toContain("max_in_flight: 1000");
    expect(exported).not.toMatch(/name: declared/);
    expect(exported).not.toMatch(/llmgw_(key|admin|read)_/);
    const file = path.join(folder, "catalog.yaml");
    writeFileSync(file, exported);

    const fresh = await start("fresh");
    const dry = await ctlAgainst(fresh, ["import", file, "--dry-run"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("add the runtime model chat");
    expect(await ctlOutput(fresh, ["models", "--json"])).not.toContain('"chat"');

    const imported = await ctlOutput(fresh, ["import", file]);
    expect(imported).toContain("Models added: chat, summary; unchanged: none.");
    // The fresh server's own first admin token has the same name and role as the source's.
    expect(imported).toContain("Tokens created: ci-bot, grafana; unchanged: admin.");
    const newKey = /^\s+key data-team: (llmgw_key_\S+)$/m.exec(imported)?.[1];
    expect(newKey, imported).toBeDefined();
    // The revoked key came across revoked, with no secret to hand out.
    expect(imported).not.toMatch(/key old-team:/);
    expect(await ctlOutput(fresh, ["export"])).toBe(exported);

    // The new key works on the new server, for the models it was limited to.
    const answer = await new OpenAI({ baseURL: `${fresh.url}/v1`, apiKey: newKey as string, maxRetries: 0 }).chat.completions.create({ model: "chat-latest", messages: [{ role: "user", content: "hi" }] });
    expect(answer.choices[0]?.message.content).toBe("hi");

    const again = await ctlOutput(fresh, ["import", file]);
    expect(again).toContain("Models added: none; unchanged: chat, summary.");
  }, roomy);

  it("refuses an import that collides, naming each name and what to do, and writes nothing", async () => {
    const target = await start("collide");
    await admin(target, "POST", "/api/v1/models", { name: "summary", external: external(), owner: "someone-else" });
    await admin(target, "POST", "/api/v1/tokens", { name: "grafana", role: "admin" });
    const file = path.join(folder, "catalog.yaml");
    const before = await ctlOutput(target, ["export"]);
    const refused = await ctlAgainst(target, ["import", file]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("the import would collide with 2 names on this server: models summary, tokens grafana; nothing was imported");
    expect(refused.stderr).toContain("llmgw ctl model remove summary");
    expect(refused.stderr).toContain("llmgw ctl token revoke grafana");
    expect(await ctlOutput(target, ["export"])).toBe(before);

    // A model declared in the target's server.yaml is a collision too: the file is that model's record.
    const declared = path.join(folder, "declared.yaml");
    writeFileSync(declared, readFileSync(file, "utf8").replace("name: summary", "name: declared"));
    const shadow = await ctlAgainst(await start("declared-target"), ["import", declared]);
    expect(shadow.stderr).toMatch(/models declared: declared in declared-target\.yaml on this server/);
  }, roomy);

  it("refuses a malformed export file with its line, column and the fix, before sending anything", async () => {
    const file = path.join(folder, "bad.yaml");
    writeFileSync(file, ["version: 1", "models: []", "versions: []", "keys:", "  - name: k", "    models: null", "    rpm: -3", "    tpm: null", "    expires_at: null", "    revoked_at: null", "tokens: []", ""].join("\n"));
    const refused = await ctlAgainst(source, ["import", file]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/bad\.yaml:7:\d+/);
    expect(refused.stderr).toContain("keys[0].rpm");
    writeFileSync(file, "version: 2\nmodels: []\nversions: []\nkeys: []\ntokens: []\n");
    expect((await ctlAgainst(source, ["import", file])).stderr).toContain("1, the only export format this release reads");
  }, roomy);

  it("backs up the SQLite state while the server serves, and a server started on the copy has the catalog, keys and usage", async () => {
    const { key } = (await admin(source, "POST", "/api/v1/keys", { name: "backup-key" })) as { key: string };
    const client = new OpenAI({ baseURL: `${source.url}/v1`, apiKey: key, maxRetries: 0 });
    // Requests go on while the copy is taken: the backup is online.
    const load = Promise.all(Array.from({ length: 20 }, () => client.chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hi" }] })));
    const copy = path.join(folder, "backup.db");
    const backedUp = await ctlAgainst(source, ["backup", copy]);
    await load;
    expect(backedUp.code, backedUp.stderr).toBe(0);
    expect(backedUp.stdout).toContain("To restore: stop the server, put the copy at <data-dir>/llmgw.db");
    expect(statSync(copy).mode & 0o777).toBe(0o600);
    expect(existsSync(`${copy}.partial`)).toBe(false);
    // A second backup never overwrites the first.
    expect((await ctlAgainst(source, ["backup", copy])).stderr).toContain("exists already");
    // The usage of every answered request is in a copy taken after them.
    const after = path.join(folder, "after.db");
    await ctlOutput(source, ["backup", after]);

    const restoredDir = path.join(folder, "restored");
    mkdirSync(restoredDir, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(restoredDir, "llmgw.db"), readFileSync(after), { mode: 0o600 });
    // The server key stays with its data directory: agents and the key check need the same one.
    writeFileSync(path.join(restoredDir, "server-key"), readFileSync(path.join(source.dataDir, "server-key")), { mode: 0o600 });
    const restored = await start("source", restoredDir);
    const withToken = { url: restored.url, token: source.token };
    expect(await ctlOutput(withToken, ["export"])).toBe(await ctlOutput(source, ["export"]));
    const usage = JSON.parse(await ctlOutput(withToken, ["usage", "--json"])) as { usage: { key: string; requests: number; prompt_tokens: number }[] };
    const spent = usage.usage.find((row) => row.key === "backup-key");
    expect(spent).toMatchObject({ requests: 20, prompt_tokens: 20 * fakeProviderUsage.promptTokens });
    // The restored server takes the key made before the backup.
    const answer = await new OpenAI({ baseURL: `${restored.url}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hi" }] });
    expect(answer.choices[0]?.message.content).toBe("hi");
  }, roomy);
});
