import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import { existsSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import type net from "node:net";
import path from "node:path";
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { simulatedPng } from "../../src/engines/sim/sim-images.js";
import type { ReplicaView } from "../../src/protocol/views.js";
import { killGroup, waitFor as waitUntil } from "../support/fake-engine.js";
import { llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

const waitFor = <T>(check: () => Promise<T | undefined | false>, timeoutMs: number, what: string) => waitUntil(check, timeoutMs, what, 200);

/** The weights server the nodes fetch the models' files from: a mirror on loopback. */
async function startFileServer(files: Record<string, Buffer>): Promise<{ url: string; server: Server; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    const name = (request.url ?? "/").slice(1);
    requests.push(`${request.method} ${name}`);
    const bytes = files[name];
    if (!bytes) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(bytes.length) });
    response.end(request.method === "HEAD" ? undefined : bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, server, requests };
}

/** A preset's model entry with its files fetched from the loopback mirror instead of the hub (the test has no network). */
function presetFromMirror(name: string, mirror: string): Record<string, unknown> {
  const preset = parse(readFileSync(path.resolve(import.meta.dirname, `../../presets/${name}.yaml`), "utf8")) as { model: { profiles: { comfy: { files: { source: string }[] } }[] } };
  for (const profile of preset.model.profiles) {
    for (const file of profile.comfy.files) file.source = `${mirror}/${file.source.split("/").pop() ?? ""}`;
  }
  return preset.model;
}

describe("images and 3D through ComfyUI: a server, a simulated agent that installs ComfyUI, the openai client", () => {
  let directory: string;
  let server: ServerProcess;
  let mirror: { url: string; server: Server; requests: string[] };
  let agent: ChildProcess | undefined;
  const comfyFolder = () => path.join(directory, "node-data", "ComfyUI");

  const ctlRun = async (...args: string[]) => await runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);
  const ctl = async (...args: string[]) => {
    const result = await ctlRun(...args);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
    return result.stdout;
  };
  const replicas = async () => (JSON.parse(await ctl("replicas", "--json")) as { replicas: ReplicaView[] }).replicas;
  const client = () => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused-on-an-open-gateway", maxRetries: 0, timeout: 60_000 });
  const readyReplica = async (model: string) => await waitFor(async () => (await replicas()).find((replica) => replica.model === model && replica.state === "ready"), 90_000, `${model} ready`);
  const routed = async (model: string) =>
    await waitFor(async () => new RegExp(`llmgw_gateway_replicas\\{model="${model}",state="ready"\\} 1\\b`).test(await (await fetch(`${server.url}/metrics`)).text()), 10_000, `${model} in the routing table`);

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-comfy-e2e-");
    mirror = await startFileServer({ "flux1-schnell-fp8.safetensors": Buffer.from("flux weights"), "model.fp16.safetensors": Buffer.from("hunyuan weights") });
    writeFileSync(
      path.join(directory, "server.yaml"),
      stringify({ gateway: { auth: "open" }, models: [{ name: "tiny-chat", scaling: { min: 0, max: 0 }, profiles: [{ engine: "vllm", source: "hf://example/tiny-chat@main", gpus: 1 }] }] }),
    );
    // The operator's install command: here a script that makes a checkout with a main.py, and says it ran.
    const install = path.join(directory, "install-comfyui.sh");
    writeFileSync(install, `#!/bin/sh\nset -e\nmkdir -p "$COMFYUI_DIR"\necho "# ComfyUI" > "$COMFYUI_DIR/main.py"\necho ran >> "${path.join(directory, "installs.log")}"\n`, { mode: 0o755 });
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml"] });
    const joinToken = (JSON.parse(await ctl("node", "token", "--json")) as { token: string }).token;
    agent = spawn(
      process.execPath,
      [llmgwBin, "agent", "--server", server.url, "--name", "comfy-node", "--data-dir", path.join(directory, "node-data"), "--simulate", "2xH100-80GB@nvl0,cpu:16c/64g", "--simulate-fetch", "--comfyui-install", install],
      { detached: true, stdio: "ignore", env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined } },
    );
    await waitFor(async () => (JSON.parse(await ctl("nodes", "--json")) as { nodes: { state: string }[] }).nodes.some((node) => node.state === "ready"), 30_000, "the node ready");
  }, 120_000);

  afterAll(async () => {
    for (const replica of await replicas().catch(() => [] as ReplicaView[])) killGroup(replica.pid);
    killGroup(agent?.pid);
    await server?.stop();
    await new Promise((resolve) => mirror?.server.close(resolve));
  });

  it("says at `ctl model add` that the node will install ComfyUI, installs it once, and puts the model's file where its loader looks", async () => {
    const file = path.join(directory, "flux.yaml");
    writeFileSync(file, stringify(presetFromMirror("flux1-schnell", mirror.url)));
    const added = await ctl("model", "add", "-f", file);
    expect(added).toContain("ComfyUI will be installed (the agent's --comfyui-install) on comfy-node when flux1-schnell is first placed there");
    await readyReplica("flux1-schnell");
    expect(existsSync(path.join(comfyFolder(), "main.py"))).toBe(true);
    const linked = path.join(comfyFolder(), "models", "checkpoints", "flux1-schnell-fp8.safetensors");
    expect(readFileSync(linked, "utf8")).toBe("flux weights");
    expect(readlinkSync(linked)).toContain(path.join("node-data", "weights"));
    const comfyui = await waitFor(async () => {
      const node = (JSON.parse(await ctl("nodes", "--json")) as { nodes: { comfyui: { present: boolean; installable: boolean } }[] }).nodes[0];
      return node?.comfyui.present ? node.comfyui : undefined;
    }, 40_000, "the inventory to say ComfyUI is there");
    expect(comfyui).toEqual({ present: true, installable: true });
  }, 120_000);

  it("generates images with the openai client's images.generate, as base64 and as a URL", async () => {
    await routed("flux1-schnell");
    const openai = client();
    const inline = await openai.images.generate({ model: "flux1-schnell", prompt: "a lighthouse at dusk", size: "128x64", response_format: "b64_json" });
    const png = Buffer.from(inline.data?.[0]?.b64_json ?? "", "base64");
    expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([128, 64]);
    const linked = await openai.images.generate({ model: "flux1-schnell", prompt: "a lighthouse at dusk", size: "64x64", response_format: "url" });
    const image = await fetch(linked.data?.[0]?.url ?? "");
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await image.arrayBuffer()).readUInt32BE(16)).toBe(64);
  });

  it("refuses an images request to a chat model, naming what that model serves", async () => {
    const refused = (await client().images.generate({ model: "tiny-chat", prompt: "a cat" }).catch((error: unknown) => error)) as APIError;
    expect(refused).toBeInstanceOf(APIError);
    expect(refused.status).toBe(400);
    expect(refused.message).toContain("model tiny-chat serves text (chat, completions, embeddings), not images");
  });

  it("turns an image into a mesh with the image-to-3D preset: a GLB with glTF's header", async () => {
    const file = path.join(directory, "hunyuan.yaml");
    writeFileSync(file, stringify(presetFromMirror("hunyuan3d-2", mirror.url)));
    await ctl("model", "add", "-f", file);
    await readyReplica("hunyuan3d-2");
    await routed("hunyuan3d-2");
    // Renamed as ComfyUI's examples name it: the loader in the workflow asks for this name.
    expect(readFileSync(path.join(comfyFolder(), "models", "checkpoints", "hunyuan3d-dit-v2.safetensors"), "utf8")).toBe("hunyuan weights");
    const form = new FormData();
    form.set("image", new Blob([simulatedPng(48, 48, 3)], { type: "image/png" }), "chair.png");
    const answer = await fetch(`${server.url}/v1/llmgw/comfy/hunyuan3d-2`, { method: "POST", body: form });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("model/gltf-binary");
    const glb = Buffer.from(await answer.arrayBuffer());
    expect(glb.subarray(0, 4).toString("latin1")).toBe("glTF");
    expect(glb.readUInt32LE(4)).toBe(2);
    expect(glb.readUInt32LE(8)).toBe(glb.length);
    // One node, two ComfyUI models: ComfyUI was installed once.
    expect(readFileSync(path.join(directory, "installs.log"), "utf8")).toBe("ran\n");
  }, 120_000);

  it("refuses at `ctl model add` a workflow input that points at a node the workflow does not have", async () => {
    const model = presetFromMirror("flux1-schnell", mirror.url) as { name: string; profiles: { comfy: { inputs: Record<string, string> } }[] };
    model.name = "flux-typo";
    (model.profiles[0] as { comfy: { inputs: Record<string, string> } }).comfy.inputs.prompt = "60.inputs.text";
    const file = path.join(directory, "typo.yaml");
    writeFileSync(file, stringify(model));
    const result = await ctlRun("model", "add", "-f", file);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("profiles[0].comfy.inputs.prompt");
    expect(result.stderr).toContain('"60.inputs.text" names node 60, which the workflow does not have (its nodes: 6, 8, 9, 27, 30, 31, 33)');
    expect(await ctl("models")).not.toContain("flux-typo");
  });
});
