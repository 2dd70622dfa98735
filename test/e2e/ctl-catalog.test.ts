import { copyFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, postgresAdminUrl } from "../support/postgres.js";
import { runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { expectDocumentedShape } from "../support/documented-shape.js";

const serverYaml = `models:
  - name: declared-chat
    context: 32768
    scaling: { min: 1, max: 3 }
    profiles:
      - { engine: vllm, source: "https://mirror.example/qwen/", gpu_class: h100 }
`;

function modelFile(directory: string, name: string, text: string): string {
  const file = path.join(directory, name);
  writeFileSync(file, text);
  return file;
}

describe("llmgw server and ctl, as real processes", () => {
  let directory: string;
  let server: ServerProcess;
  let ctl: (...args: string[]) => ReturnType<typeof runCli>;

  beforeAll(async () => {
    directory = temporaryDirectory();
    writeFileSync(path.join(directory, "server.yaml"), serverYaml);
    // Started from `directory` with the default data dir, as an operator would.
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "llmgw-data"), args: ["-c", "server.yaml"] });
    ctl = (...args: string[]) => runCli(["ctl", "--server", server.url, ...args], { cwd: directory, env: { SUDO_USER: "carol" } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("prints the admin token once and keeps it in a file only its owner can read", async () => {
    expect(server.output()).toContain(server.token);
    expect(statSync(path.join(server.dataDir, "admin-token")).mode & 0o777).toBe(0o600);
  });

  it("finds the admin token by itself when run from the server's folder", async () => {
    const result = await ctl("models");
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/declared-chat\s+file\s+pending\s+0\/1\s+standard\s+1\.\.3\s+vllm\(1×h100\)/);
  });

  it("adds a model from YAML and shows what is in force, with defaults filled in", async () => {
    const file = modelFile(directory, "small.yaml", "name: small\nscaling: { min: 0 }\nprofiles:\n  - engine: llamacpp\n    source: /models/small.gguf\n    slots: 2\n");
    // A path that exists on no machine here: stored unread, as for a mirror not up yet.
    const added = await ctl("model", "add", "-f", file, "--no-source-check");
    expect(added.code).toBe(0);
    expect(added.stdout).toContain("class      opportunistic (the default for its scaling)");
    expect(added.stdout).toContain("scaling    min 0, max 1, on demand");

    const listed = await ctl("models", "--json");
    const models = JSON.parse(listed.stdout).models as { name: string; source: string; class: string; scaling: unknown; state: string; replicas: unknown; profiles: { name: string; gpus: number }[] }[];
    const small = models.find((model) => model.name === "small");
    expect(small).toMatchObject({
      source: "runtime",
      class: "opportunistic",
      scaling: { min: 0, max: 1, idle_timeout: "10m" },
      state: "on-demand",
      replicas: { ready: 0, desired: 0 },
      profiles: [{ name: "llamacpp", gpus: 0 }],
    });
  });

  it("prints every documented field in --json, null when absent (memory_gb and cpu_cores of a GPU profile included)", async () => {
    const shown = await ctl("model", "show", "declared-chat", "--json");
    expect(shown.code).toBe(0);
    const model = JSON.parse(shown.stdout) as { profiles: Record<string, unknown>[] };
    expectDocumentedShape(model, "Model");
    expect(model.profiles[0]).toMatchObject({ memory_gb: null, cpu_cores: null, quantization: null, gpu_class: "h100" });

    const file = modelFile(directory, "remote.yaml", "name: remote-gpt\nexternal: { base_url: https://api.example/v1 }\n");
    const added = await ctl("model", "add", "-f", file, "--json");
    expectDocumentedShape(JSON.parse(added.stdout), "AddedModel");
    expect(JSON.parse(added.stdout)).toMatchObject({ external: { base_url: "https://api.example/v1", api_key_env: null, model: null }, profiles: [] });
    for (const listed of (JSON.parse((await ctl("models", "--json")).stdout) as { models: unknown[] }).models) expectDocumentedShape(listed, "Model");
    expect((await ctl("model", "remove", "remote-gpt")).code).toBe(0);
  });

  it("changes scaling, resources, class, owner and fallbacks, each answered with the model in force", async () => {
    modelFile(directory, "big.yaml", "name: big\nprofiles: [{ engine: vllm, source: x, gpus: 2 }, { name: cpu, engine: llamacpp, source: y.gguf }]\n");
    expect((await ctl("model", "add", "-f", path.join(directory, "big.yaml"), "--no-source-check")).code).toBe(0);

    const scaled = await ctl("scale", "big", "--min", "3");
    expect(scaled.stdout).toContain("big now scales min 3, max 3.");
    const resources = JSON.parse((await ctl("model", "resources", "big", "--memory", "24", "--cores", "8", "--profile", "cpu", "--json")).stdout);
    expect(resources.profiles[1]).toMatchObject({ name: "cpu", memory_gb: 24, cpu_cores: 8 });
    expect((await ctl("model", "class", "big", "critical")).stdout).toContain("big is now critical.");
    expect((await ctl("model", "owner", "big", "ml-platform")).stdout).toContain("big is now owned by ml-platform.");
    expect((await ctl("model", "fallbacks", "big", "small,declared-chat")).stdout).toContain("big now falls back to small, then declared-chat.");

    const shown = JSON.parse((await ctl("model", "show", "big", "--json")).stdout);
    expect(shown).toMatchObject({ class: "critical", owner: "ml-platform", fallbacks: ["small", "declared-chat"], scaling: { min: 3, max: 3 } });
  });

  it("records each change with the token's name and the sudo user", async () => {
    const audit = JSON.parse((await ctl("audit", "--model", "big", "--json")).stdout).events as { action: string; actor: string; actor_user: string; before: unknown; after: { scaling?: unknown } }[];
    for (const event of audit) expectDocumentedShape(event, "ctl audit --json");
    expect(audit.map((event) => event.action)).toEqual([
      "model-fallbacks-changed",
      "model-owner-changed",
      "model-class-changed",
      "model-resources-changed",
      "model-scaled",
      "model-added",
    ]);
    // Only root's sudo user is trusted; other users are named as themselves.
    const expectedUser = process.getuid?.() === 0 ? "carol" : expect.any(String);
    expect(audit[0]).toMatchObject({ actor: "admin", actor_user: expectedUser });
    expect(audit[4]?.after.scaling).toEqual({ min: 3 });
    const text = (await ctl("audit", "--model", "big")).stdout;
    expect(text).toContain('scaling: (unset) → {"min":3}');
  });

  it("refuses to remove, scale or resize a declared model, with the reason and the fix", async () => {
    for (const args of [["model", "remove", "declared-chat"], ["scale", "declared-chat", "--min", "2"], ["model", "resources", "declared-chat", "--memory", "8"]]) {
      const result = await ctl(...args);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('model "declared-chat" is declared in server.yaml');
      expect(result.stderr).toContain('Edit the entry for "declared-chat" in server.yaml');
    }
  });

  it("names file, line and column for a malformed or misspelt model file, and stores nothing", async () => {
    const broken = modelFile(directory, "broken.yaml", "name: broken\nprofiles:\n  - engine: vllm\n    source: [x\n");
    const malformed = await ctl("model", "add", "-f", broken);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/error: broken\.yaml:\d+:\d+: /);

    const typo = modelFile(directory, "typo.yaml", "name: typo\nprofiles:\n  - engine: vllm\n    source: x\n    gpu: 2\n");
    expect((await ctl("model", "add", "-f", typo)).stderr).toContain('typo.yaml:5:5: profiles[0].gpu: unknown key "gpu" (did you mean "gpus"?)');

    const wrongType = modelFile(directory, "wrong.yaml", "name: wrong\nprofiles:\n  - { engine: vllm, source: x, gpus: -1 }\n");
    expect((await ctl("model", "add", "-f", wrongType)).stderr).toContain("profiles[0].gpus: a whole number of cards, 0 to 64");

    const engine = modelFile(directory, "engine.yaml", "name: engine\nprofiles:\n  - { engine: ollama, source: x }\n");
    expect((await ctl("model", "add", "-f", engine)).stderr).toContain("profiles[0].engine: one of vllm, sglang, trtllm, llamacpp, comfyui");

    const names = JSON.parse((await ctl("models", "--json")).stdout).models.map((model: { name: string }) => model.name);
    expect(names).not.toContain("broken");
    expect(names).not.toContain("typo");
  });

  it("refuses a duplicate name, a missing fallback and a fallback cycle", async () => {
    const duplicate = modelFile(directory, "dup.yaml", "name: declared-chat\nprofiles: [{ engine: vllm, source: x }]\n");
    const duplicated = await ctl("model", "add", "-f", duplicate);
    expect(duplicated.stderr).toContain('"declared-chat" (model name) is already the model name of server.yaml models[0] (declared-chat)');

    const ghost = modelFile(directory, "ghost.yaml", "name: haunted\nfallbacks: [ghost]\nprofiles: [{ engine: vllm, source: x }]\n");
    expect((await ctl("model", "add", "-f", ghost)).stderr).toContain('"ghost" is not a model in the catalog');

    const cycle = await ctl("model", "fallbacks", "small", "big");
    expect(cycle.code).toBe(1);
    expect(cycle.stderr).toMatch(/fallbacks go round in a circle: (small → big → small|big → small → big)/);
  });

  it("answers 401 with how to get a token, not where the server keeps it, when none is sent", async () => {
    const response = await request(`${server.url}/api/v1/models`);
    expect(response.statusCode).toBe(401);
    const body = (await response.body.json()) as { error: { code: string; hint: string } };
    expect(body.error.code).toBe("unauthorized");
    expect(body.error.hint).toContain("ctl token create");
    expect(body.error.hint).not.toContain(server.dataDir);

    const elsewhere = temporaryDirectory();
    const result = await runCli(["ctl", "--server", server.url, "models"], { cwd: elsewhere });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("this API needs a bearer token");
  });

  it("tells a client with no API version in common which side to upgrade", async () => {
    const response = await request(`${server.url}/api/v1/models`, { headers: { authorization: `Bearer ${server.token}`, "llmgw-api": "7-9", "llmgw-version": "9.0.0" } });
    expect(response.statusCode).toBe(426);
    const body = (await response.body.json()) as { error: { code: string; message: string; hint: string } };
    expect(body.error.code).toBe("version_unsupported");
    expect(body.error.hint).toBe("Upgrade the server to llmgw 9.0.0 or newer.");
    expect(response.headers["llmgw-version"]).toBeDefined();
  });

  it("makes a read-only token with ctl that lists but cannot change, and revokes it", async () => {
    const created = await ctl("token", "create", "dashboard");
    expect(created.stdout).toContain('Created read token "dashboard". It is shown this once');
    const scripted = JSON.parse((await ctl("token", "create", "scripted", "--json")).stdout) as unknown;
    expectDocumentedShape(scripted, "ctl token create --json");
    for (const listed of (JSON.parse((await ctl("tokens", "--json")).stdout) as { tokens: unknown[] }).tokens) expectDocumentedShape(listed, "ctl tokens --json");
    expect((await ctl("token", "revoke", "scripted")).code).toBe(0);
    const token = (/\n  (llmgw_read_\S+)/.exec(created.stdout) ?? [])[1] as string;
    const reader = (...args: string[]) => runCli(["ctl", "--server", server.url, "--token", token, ...args]);
    expect((await reader("models")).stdout).toContain("declared-chat");
    const refused = await reader("scale", "big", "--min", "1");
    expect(refused.stderr).toContain('token "dashboard" is read-only; this change needs an admin token');
    expect((await ctl("tokens")).stdout).toMatch(/dashboard\s+read/);
    expect((await ctl("token", "revoke", "dashboard")).stdout).toContain('Revoked token "dashboard"');
    expect((await reader("models")).stderr).toContain("not one this server issued");
  });

  it("says which address it tried when no server is running", async () => {
    const result = await runCli(["ctl", "--server", "http://127.0.0.1:9", "models"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("could not reach the llmgw server at http://127.0.0.1:9 (connection refused");
  });

  it("keeps runtime models across a restart, and does not print the token again", async () => {
    await server.stop();
    server = await startServerProcess({ cwd: directory, dataDir: server.dataDir, args: ["-c", "server.yaml"] });
    expect(server.output()).not.toContain("Admin token");
    const names = JSON.parse((await ctl("models", "--json")).stdout).models.map((model: { name: string }) => model.name);
    expect(names).toEqual(["declared-chat", "big", "small"]);
  });
});

describe("llmgw server start-up", () => {
  it("refuses to start on a broken server.yaml, naming the line", async () => {
    const directory = temporaryDirectory();
    writeFileSync(path.join(directory, "server.yaml"), "models:\n  - name: a\n    profiles: [{ engine: vllm, source: x, gpus: two }]\n");
    const result = await runCli(["server", "-c", path.join(directory, "server.yaml"), "--listen", "127.0.0.1:0", "--data-dir", path.join(directory, "data")]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("server.yaml:3:");
    expect(result.stderr).toContain("models[0].profiles[0].gpus: a whole number of cards, 0 to 64");
  });

  it("says which address is taken, and how to choose another, when the port is in use", async () => {
    const first = await startServerProcess();
    try {
      const directory = temporaryDirectory();
      const taken = new URL(first.url).host;
      const result = await runCli(["server", "--listen", taken, "--data-dir", path.join(directory, "data")]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`error: cannot listen on ${taken}: another process already listens there`);
      expect(result.stderr).toContain("choose another port with --listen");
    } finally {
      await first.stop();
    }
  });

  it.runIf(postgresAdminUrl)("keeps its state in Postgres when given a postgres:// URL", async () => {
    const database = await createTestDatabase();
    const servers: ServerProcess[] = [];
    try {
      const directory = temporaryDirectory();
      const first = await startServerProcess({ args: ["--database", database.url], dataDir: path.join(directory, "data") });
      servers.push(first);
      expect(first.output()).toContain("state:   Postgres at");
      const password = new URL(database.url).password;
      expect(first.output()).not.toContain(`:${password}@`);
      expect(first.output()).toContain(":***@");
      const file = path.join(directory, "pg.yaml");
      writeFileSync(file, "name: on-postgres\nprofiles: [{ engine: vllm, source: x }]\n");
      expect((await runCli(["ctl", "--server", first.url, "--token", first.token, "model", "add", "-f", file, "--no-source-check"])).code).toBe(0);
      await first.stop();
      // A second data directory, same database: the catalog and the token live in Postgres, and the server
      // key (what agents trust) must come along, or the second server refuses to start, naming the file.
      const otherData = path.join(directory, "other-data");
      await expect(startServerProcess({ args: ["--database", database.url], dataDir: otherData })).rejects.toThrow(
        `Copy server-key from the data directory of a server already using this database to ${path.join(otherData, "server-key")}`,
      );
      copyFileSync(path.join(directory, "data", "server-key"), path.join(otherData, "server-key"));
      const second = await startServerProcess({ args: ["--database", database.url], dataDir: otherData });
      servers.push(second);
      expect(second.token).toBe("");
      // Its data dir holds no admin token, so its Next: line asks for one rather than pointing at that dir.
      expect(/Next: (.+)/.exec(second.output())?.[1]).toMatch(/ctl models --server \S+ --token TOKEN /);
      const listed = await runCli(["ctl", "--server", second.url, "--token", first.token, "models"]);
      expect(listed.stdout).toContain("on-postgres");
    } finally {
      // Stopped on failure too: a server left running would hold the database the drop needs.
      await Promise.all(servers.map((server) => server.stop()));
      await database.drop();
    }
  });
});
