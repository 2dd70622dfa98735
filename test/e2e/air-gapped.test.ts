import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyModelGguf, tinyModelShape, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";
import { startHubServer, type HubServer } from "../../src/hub/local-hub.js";
import type { MirrorManifest } from "../../src/plan/mirror-manifest.js";
import type { ModelView, NodeView, PresetView, ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { ctlAgainst, ctlOutput, freePort, llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * An air-gapped cluster, end to end: on a "connected" machine
 * `llmgw ctl mirror pull` copies a shipped preset's files from a stand-in
 * hub into a mirror folder; the hub is then stopped, and a server and agent
 * whose hub endpoints point at a closed loopback port add the preset, plan
 * it, change its context and answer through the gateway (real llama.cpp, on
 * a tiny GGUF published under the preset's own file name), from the mirror
 * alone.
 */
describe("an air-gapped cluster served from a mirror folder written by `ctl mirror pull`", () => {
  const preset = "qwen2.5-0.5b-instruct";
  const repository = "Qwen/Qwen2.5-0.5B-Instruct-GGUF";
  const fileName = "qwen2.5-0.5b-instruct-q4_k_m.gguf";
  const mirrored = `hf/${repository}/main/${fileName}`;
  // A trained context of 32k, so the preset's 8k fits and a 64k change is over it.
  const modelBytes = tinyModelGguf({ shape: { ...tinyModelShape, contextLength: 32768 } });
  let directory: string;
  let mirror: string;
  let hub: HubServer;
  let closedHub: string;
  let hubRequestsWhenStopped: number;
  let server: ServerProcess;
  let agent: ChildProcess;
  const enginePids = new Set<number>();

  const pull = (...args: string[]) => runCli(["ctl", "mirror", "pull", ...args], { env: { HF_ENDPOINT: hub.url, HF_TOKEN: undefined } });
  const ctl = (...args: string[]) => ctlOutput(server, args);
  const get = async <T>(route: string): Promise<T> => {
    const response = await fetch(`${server.url}${route}`, { headers: { authorization: `Bearer ${server.token}` } });
    if (!response.ok) throw new Error(`GET ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-air-gapped-e2e-");
    mirror = path.join(directory, "mirror");
    const published = path.join(directory, "hub", repository);
    await writeGgufFile(path.join(published, fileName), modelBytes);
    writeFileSync(path.join(published, "README.md"), "not a model file; a single-file source does not bring it\n");
    hub = await startHubServer({ repositories: { [repository]: published } });
    closedHub = `http://127.0.0.1:${await freePort()}`;
  }, 60_000);

  afterAll(async () => {
    // The context change rolled the replica onto a new engine: collect the engines running now too, or that one outlives the test.
    if (server) {
      const now = await get<{ replicas: ReplicaView[] }>("/api/v1/replicas").catch(() => ({ replicas: [] }));
      for (const each of now.replicas) if (each.pid !== null) enginePids.add(each.pid);
    }
    if (agent) killGroup(agent.pid);
    for (const pid of enginePids) killGroup(pid);
    await server?.stop();
    await hub?.close();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it("pulls a preset's files into the mirror with their sums in the manifest and beside each file", async () => {
    const result = await pull(preset, "--to", mirror);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const sum = createHash("sha256").update(modelBytes).digest("hex");
    expect(result.stdout).toContain(`${mirrored}  ${modelBytes.length} bytes  sha256 ${sum}`);
    expect(result.stdout).toContain(`hf://${repository}/${fileName}  →  mirror:${mirrored}`);
    expect(readFileSync(path.join(mirror, mirrored))).toEqual(modelBytes);
    expect(readFileSync(path.join(mirror, `${mirrored}.sha256`), "utf8")).toBe(`${sum}  ${fileName}\n`);
    const manifest = JSON.parse(readFileSync(path.join(mirror, "llmgw-mirror.json"), "utf8")) as MirrorManifest;
    expect(Object.keys(manifest.sources)).toEqual([`hf://${repository}@main/${fileName}`]);
    expect(manifest.sources[`hf://${repository}@main/${fileName}`]).toMatchObject({
      mirror_source: `mirror:${mirrored}`,
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
      files: [{ path: mirrored, bytes: modelBytes.length, sha256: sum }],
    });
  }, 60_000);

  it("keeps what is already whole when pulled again, fetching nothing", async () => {
    const before = hub.requests.filter((url) => url.includes("/resolve/")).length;
    const again = await pull(preset, "--to", mirror);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`${mirrored}  already whole (${modelBytes.length} bytes)`);
    expect(hub.requests.filter((url) => url.includes("/resolve/")).length).toBe(before);
  }, 60_000);

  it.each([
    [["./models/local", "--to", "MIRROR"], 'is not a Hugging Face source; a mirror pull copies hub repositories'],
    [[preset, "--profile", "gpu", "--to", "MIRROR"], "preset qwen2.5-0.5b-instruct has no profile gpu; its profiles are: cpu"],
    [[`hf://${repository}/missing.gguf`, "--to", "MIRROR"], `hf://${repository}@main/missing.gguf has no such file or folder`],
    [["hf://Qwen/Not-Published", "--to", "MIRROR"], "has no repository Qwen/Not-Published"],
  ])("refuses %j, naming why, and leaves the manifest as it was", async (args, message) => {
    const manifestBefore = readFileSync(path.join(mirror, "llmgw-mirror.json"), "utf8");
    const refused = await pull(...args.map((arg) => (arg === "MIRROR" ? mirror : arg)));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(message);
    expect(readFileSync(path.join(mirror, "llmgw-mirror.json"), "utf8")).toBe(manifestBefore);
  }, 60_000);

  it("refuses a pull when the hub cannot be reached, naming where it looked", async () => {
    const refused = await runCli(["ctl", "mirror", "pull", preset, "--to", path.join(directory, "other"), "--hub-endpoint", closedHub]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`via ${closedHub}`);
    expect(refused.stderr).toContain("--hub-endpoint or HF_ENDPOINT");
  }, 60_000);

  it("serves the preset from the mirror alone once the hub is gone: added, planned, changed and answering", async () => {
    await hub.close();
    hubRequestsWhenStopped = hub.requests.length;
    writeFileSync(
      path.join(directory, "server.yaml"),
      `mirror: ${mirror}\nhuggingface:\n  endpoint: ${closedHub}\ngateway:\n  auth: open\nnodes:\n  settling_window: 2s\nreconcile:\n  interval: 500ms\n`,
    );
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml"] });
    const joinToken = (JSON.parse(await ctl("node", "token", "--json")) as { token: string }).token;
    agent = spawn(process.execPath, [llmgwBin, "agent", "--server", server.url, "--name", "cpu-node", "--data-dir", path.join(directory, "agent"), "--hf-endpoint", closedHub], {
      detached: true,
      stdio: ["ignore", "ignore", "ignore"],
      env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined, HF_ENDPOINT: undefined, CUDA_VISIBLE_DEVICES: "" },
    });
    await waitFor(async () => (await get<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes.find((node) => node.state === "ready"), 60_000, "the CPU node to join");

    const { presets } = JSON.parse(await ctl("model", "presets", "--json")) as { presets: PresetView[] };
    const listed = presets.find((candidate) => candidate.name === preset);
    // Planned from the mirror's copy: the planner counted its weights, and the source named is the mirror's.
    expect(listed?.profiles[0]).toMatchObject({ name: "cpu", source: `mirror:${mirrored}`, weights_bytes: expect.any(Number) });
    expect(listed?.on_cpu).toMatchObject({ node: "cpu-node", why_not: null });

    await ctl("model", "add", preset, "--wait", "--timeout", "3m");
    const shown = JSON.parse(await ctl("model", "show", preset, "--json")) as ModelView;
    expect(shown.profiles[0]?.source).toBe(`mirror:${mirrored}`);
    const replica = await waitFor(async () => {
      const replicas = (await get<{ replicas: ReplicaView[] }>(`/api/v1/replicas?model=${preset}`)).replicas;
      for (const each of replicas) if (each.pid !== null) enginePids.add(each.pid);
      return replicas.find((each) => each.state === "ready");
    }, 180_000, "a ready replica of the preset");
    expect(replica.node).toBe("cpu-node");

    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
    const answer = await client.chat.completions.create({ model: preset, messages: [{ role: "user", content: "Say something" }], max_tokens: 8, temperature: 0 });
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
    expect(answer.usage?.completion_tokens).toBe(8);

    // The trained context is read from the mirror's copy: over it is refused, within it is rolled out.
    const tooLong = await ctlAgainst(server, ["model", "context", preset, "64k"]);
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toContain("65536 tokens is more than qwen2.5-0.5b-instruct was trained for (32768)");
    const changed = await ctl("model", "context", preset, "4k");
    expect(changed).toContain("qwen2.5-0.5b-instruct: context 8192 tokens");
    expect(changed).toContain("→ 4096 tokens");

    expect(hub.requests.length).toBe(hubRequestsWhenStopped);
  }, 400_000);

  it("changes a model whose files no one can read only when the risk is named", async () => {
    const model = path.join(directory, "unreadable.yaml");
    writeFileSync(model, `name: unread\ncontext: 2048\nprofiles:\n  - { engine: llamacpp, source: "mirror:hf/Elsewhere/Missing-GGUF/main/missing.gguf", memory_gb: 1, cpu_cores: 0.5 }\n`);
    const refusedAdd = await ctlAgainst(server, ["model", "add", "-f", model]);
    expect(refusedAdd.code).toBe(1);
    await ctl("model", "add", "-f", model, "--no-source-check");
    const refused = await ctlAgainst(server, ["model", "context", "unread", "4k"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("cannot check a 4096-token context for unread/");
    expect(refused.stderr).toContain("its files cannot be read");
    expect(refused.stderr).toContain("--unchecked-memory");
    expect((JSON.parse(await ctl("model", "show", "unread", "--json")) as ModelView).context).toBe(2048);
    const changed = await ctl("model", "context", "unread", "4k", "--unchecked-memory");
    expect(changed).toContain("unread: context 2048 tokens");
    expect((JSON.parse(await ctl("model", "show", "unread", "--json")) as ModelView).context).toBe(4096);
  }, 120_000);
});
