import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointTensors, ggufHeaderBytes, writeBytes, writeSyntheticCheckpoint } from "../../src/plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../../src/plan/testing/fixtures.js";
import { startHubServer, type HubServer } from "../../src/hub/local-hub.js";
import type { ModelView, NodeView, ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { freePort, llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * A server whose hub and mirror are a local stand-in, one simulated node with
 * a 48 GB card, and models as files: a 7B that fits the card, a 70B that
 * does not, a folder without weights, a LoRA adapter in GGUF form, and a
 * host that accepts connections and never answers.
 */
describe("the source check and `ctl model serve`, against a real server and a simulated node", () => {
  let directory: string;
  let models: string;
  let hub: HubServer;
  let silent: Server;
  let silentUrl: string;
  let server: ServerProcess;
  let agent: ChildProcess | undefined;
  const enginePids = new Set<number>();
  let ctl: (...args: string[]) => ReturnType<typeof runCli>;

  const api = async <T>(route: string): Promise<T> => {
    const response = await fetch(`${server.url}${route}`, { headers: { authorization: `Bearer ${server.token}` } });
    if (!response.ok) throw new Error(`GET ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const modelNames = async () => (await api<{ models: ModelView[] }>("/api/v1/models")).models.map((model) => model.name);
  const modelFile = (name: string, text: string) => {
    const file = path.join(directory, name);
    writeFileSync(file, text);
    return file;
  };

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-serve-e2e-");
    models = path.join(directory, "models");
    await writeSyntheticCheckpoint(path.join(models, "Qwen2.5-7B-Instruct"), fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
    await writeSyntheticCheckpoint(path.join(models, "Llama-3.3-70B-Instruct"), fixtureConfig("Llama-3.3-70B-Instruct"), checkpointTensors(fixtureArchitecture("Llama-3.3-70B-Instruct")), 4);
    mkdirSync(path.join(models, "readme-only"));
    writeFileSync(path.join(models, "readme-only", "README.md"), "weights coming soon");
    await writeBytes(
      path.join(models, "sql-lora.gguf"),
      ggufHeaderBytes({ "general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora" }, [{ name: "blk.0.attn_q.weight.lora_a", dimensions: [4096, 16], type: "F16" }]),
    );
    hub = await startHubServer({ repositories: { "Qwen/Qwen2.5-7B-Instruct": path.join(models, "Qwen2.5-7B-Instruct") }, mirrorRoot: models });
    silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;

    writeFileSync(
      path.join(directory, "server.yaml"),
      `gateway:\n  auth: open\nhuggingface:\n  endpoint: ${hub.url}\nmirror: ${hub.url}/mirror/\nreconcile:\n  interval: 500ms\n  backoff_initial: 1s\n`,
    );
    const port = await freePort();
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--listen", `127.0.0.1:${port}`] });
    ctl = (...args: string[]) => runCli(["ctl", "--server", server.url, "--token", server.token, ...args], { cwd: directory });
    const joinToken = (JSON.parse((await ctl("node", "token", "--json")).stdout) as { token: string }).token;
    agent = spawn(process.execPath, [llmgwBin, "agent", "--server", server.url, "--name", "node-a", "--data-dir", path.join(directory, "node-a"), "--simulate", "1xL40S-48GB,cpu:4c/16g"], {
      detached: true,
      stdio: ["ignore", "ignore", "ignore"],
      env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined },
    });
    await waitFor(async () => (await api<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes.some((node) => node.state === "ready"), 30_000, "the node to join");
  }, 120_000);

  afterAll(async () => {
    if (server) {
      for (const replica of (await api<{ replicas: ReplicaView[] }>("/api/v1/replicas").catch(() => ({ replicas: [] }))).replicas) {
        if (replica.pid !== null) enginePids.add(replica.pid);
      }
    }
    killGroup(agent?.pid);
    for (const pid of enginePids) killGroup(pid);
    await server?.stop();
    silent?.closeAllConnections();
    await new Promise((resolve) => silent?.close(resolve));
    await hub?.close();
  });

  it("`key create` on this open gateway says the key is checked nowhere here, and what setting in which file turns checking on", async () => {
    const created = await ctl("key", "create", "unchecked-app", "--rpm", "5");
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^Created gateway key "unchecked-app"/);
    const note = created.stdout.slice(created.stdout.indexOf("Note: "));
    expect(note).toContain("This server's gateway is open: it checks no key, so this key's models and limits are not enforced here");
    expect(note).toContain(`set \`gateway: { auth: keys }\` in ${path.join(directory, "server.yaml")} and restart the server`);
    const json = JSON.parse((await ctl("key", "create", "unchecked-json", "--json")).stdout) as { notice: string | null };
    expect(json.notice).toContain("gateway: { auth: keys }");
  });

  it("`model add` prints each source the server read, with its size, read from the configured hub's file list", async () => {
    // On demand, so nothing takes the card the serve test needs.
    const file = modelFile("qwen-hub.yaml", "name: qwen-hub\nscaling: { min: 0 }\nprofiles:\n  - { engine: vllm, source: hf://Qwen/Qwen2.5-7B-Instruct@main, gpus: 1 }\n");
    const added = await ctl("model", "add", "-f", file);
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/profiles\[0\]\.source\s+hf:\/\/Qwen\/Qwen2\.5-7B-Instruct@main\s+14\.\d GiB \(safetensors BF16, 7\.62B parameters\)/);
    expect(hub.requests.some((request) => request.startsWith("/api/models/Qwen/Qwen2.5-7B-Instruct/tree/main"))).toBe(true);
  });

  it("refuses a model with a 404, a folder without weights, a GGUF that is not a model and a host that never answers, naming each, and stores nothing", async () => {
    const file = modelFile(
      "broken.yaml",
      [
        "name: broken",
        "scaling: { min: 0 }",
        "profiles:",
        "  - { engine: vllm, source: mirror:Qwen2.5-7B-Instruct-typo/, gpus: 1 }",
        "  - { engine: vllm, source: mirror:readme-only/, gpus: 1 }",
        "  - { engine: llamacpp, source: mirror:sql-lora.gguf }",
        `  - { engine: vllm, source: "${silentUrl}/qwen/", gpus: 1 }`,
        "",
      ].join("\n"),
    );
    const refused = await ctl("model", "add", "-f", file);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("4 sources do not answer as models");
    expect(refused.stderr).toMatch(/broken\.profiles\[0\]\.source: .*config\.json of .*Qwen2\.5-7B-Instruct-typo\/.*not found/);
    expect(refused.stderr).toMatch(/broken\.profiles\[1\]\.source: .*config\.json/);
    expect(refused.stderr).toMatch(/broken\.profiles\[2\]\.source: .*is a GGUF lora adapter, not a model/);
    expect(refused.stderr).toMatch(/broken\.profiles\[3\]\.source: .*no answer within 10 s/);
    expect(refused.stderr).toContain("--no-source-check");
    expect(await modelNames()).not.toContain("broken");

    // The same refusal for an API caller, with the same details.
    const response = await fetch(`${server.url}/api/v1/models`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "broken-api", profiles: [{ engine: "vllm", source: "mirror:readme-only/", gpus: 1 }] }),
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({ error: { code: "source_unreadable", details: [{ where: "broken-api.profiles[0].source" }] } });
    expect(await modelNames()).not.toContain("broken-api");
  }, 60_000);

  it("stores a model unread with --no-source-check, and says so", async () => {
    const file = modelFile("later.yaml", "name: later\nscaling: { min: 0 }\nprofiles:\n  - { engine: vllm, source: mirror:not-uploaded-yet/, gpus: 1 }\n");
    const added = await ctl("model", "add", "-f", file, "--no-source-check");
    expect(added.code).toBe(0);
    expect(added.stdout).toContain("Sources not read (--no-source-check)");
    expect(await modelNames()).toContain("later");
    const help = await runCli(["ctl", "model", "add", "--help"]);
    expect(help.stdout.replace(/\s+/g, " ")).toContain(
      "--no-source-check store the model without the server reading its sources first: right when the mirror is not up yet, or when the nodes reach the source by an address the server does not",
    );
  });

  it("serves a local folder that fits: prints the definition, places it on the node, waits until ready, and it answers through /v1", async () => {
    const served = await ctl("model", "serve", path.join(models, "Qwen2.5-7B-Instruct"), "--wait", "--timeout", "2m");
    expect(served.stderr).toBe("");
    expect(served.code).toBe(0);
    expect(served.stdout).toContain("Best fit: vllm bf16 on 1 l40s card");
    expect(served.stdout).toMatch(/^name: qwen2\.5-7b-instruct$/m);
    expect(served.stdout).toMatch(/^\s+gpu_class: l40s$/m);
    expect(served.stdout).toMatch(/profiles\[0\]\.source\s+\S+Qwen2\.5-7B-Instruct\s+14\.\d GiB/);
    expect(served.stdout).toMatch(/qwen2\.5-7b-instruct-[0-9a-f]{6} on node-a: (pending|fetching|starting)/);
    // The last line, as `model add --wait` ends.
    expect(served.stdout.trimEnd().split("\n").at(-1)).toBe("qwen2.5-7b-instruct is ready: 1 replica serving.");
    expect(served.stdout).toContain(`curl -sN ${server.url}/v1/chat/completions`);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30_000 });
    const answer = await client.chat.completions.create({ model: "qwen2.5-7b-instruct", messages: [{ role: "user", content: "Say hello." }], max_tokens: 4 });
    // The simulated engine's first four tokens name the model that answered.
    expect(answer.choices[0]?.message.content).toBe("Simulated answer from qwen2.5-7b-instruct:");
  }, 150_000);

  it("refuses a class it does not know before asking the server anything", async () => {
    const refused = await runCli(["ctl", "--server", "http://127.0.0.1:9", "model", "serve", "Qwen/Qwen2.5-7B-Instruct", "--class", "vip"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('"vip" is not a class: one of critical, standard, opportunistic.');
  });

  it("adds nothing when nothing fits, printing the planner's table and why", async () => {
    // 140 GB at bf16 against one 48 GB card (busy with the model served above, too).
    // Written relative to the shell's folder, which is not the server's: ctl sends the absolute path.
    const refused = await runCli(["ctl", "--server", server.url, "--token", server.token, "model", "serve", "./Llama-3.3-70B-Instruct", "--no-wait"], { cwd: models });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(`${path.join(models, "Llama-3.3-70B-Instruct")}: llama, 70.`);
    expect(refused.stdout).toMatch(/70\.\d\dB parameters/);
    expect(refused.stdout).toMatch(/l40s/);
    expect(refused.stderr).toContain("nothing was added");
    expect(await modelNames()).not.toContain("llama-3.3-70b-instruct");
  });
});
