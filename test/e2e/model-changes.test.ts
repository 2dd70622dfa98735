import { rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointTensors, writeSyntheticCheckpoint } from "../../src/plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../../src/plan/testing/fixtures.js";
import type { ModelChangeView } from "../../src/protocol/model-change-view.js";
import type { AuditEventView } from "../../src/protocol/views.js";
import { startCluster, steadyStream, type Cluster } from "../support/cluster.js";
import { waitFor } from "../support/fake-engine.js";

/**
 * `ctl model context` and `ctl model gpus` against a server and two simulated
 * agents as real processes. The models' sources are header-only checkpoints
 * of real configs, so the server reads the trained context, the heads and the
 * weights as it would from a download. node-a has four H100s, node-b four
 * A100s: each model's class decides where it can go, so "room beside" is known.
 */
describe("changing a served model's context and cards", () => {
  let cluster: Cluster;
  let qwen: string;
  let llama70: string;

  const profile = (fields: string) => `{ ${fields} }`;
  const model = (name: string, extra: string, fields: string) => `name: ${name}\n${extra}profiles:\n  - ${profile(fields)}\n`;

  beforeAll(async () => {
    cluster = await startCluster("llmgw-model-changes-", ["node-a", "node-b"], { "node-a": "4xH100-80GB@nvl0,cpu:16c/64g", "node-b": "4xA100-80GB@nvl1,cpu:16c/64g" });
    qwen = path.join(cluster.directory, "Qwen2.5-7B-Instruct");
    llama70 = path.join(cluster.directory, "Llama-3.3-70B-Instruct");
    await writeSyntheticCheckpoint(qwen, fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
    await writeSyntheticCheckpoint(llama70, fixtureConfig("Llama-3.3-70B-Instruct"), checkpointTensors(fixtureArchitecture("Llama-3.3-70B-Instruct")), 4);
    await cluster.addModel("chat", model("chat", "context: 8192\n", `engine: vllm, source: "${qwen}", gpu_class: h100, gpus: 1`), "--wait");
    // Kept in the catalog only (max 0): each refusal is about the numbers, not about room.
    await cluster.addModel("big", model("big", "context: 16384\nscaling: { min: 0, max: 0 }\n", `engine: vllm, source: "${llama70}", gpu_class: h100, gpus: 2`));
    await cluster.addModel("image", model("image", "scaling: { min: 0, max: 0 }\n", `engine: comfyui, source: "hf://example/sdxl@main", gpu_class: h100, gpus: 1, comfy: { outputs: images, inputs: { prompt: "6.inputs.text" }, workflow: { "6": { class_type: CLIPTextEncode, inputs: { text: "" } } } }`));
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  const refused = async (...args: string[]) => {
    const result = await cluster.ctlRaw(...args);
    expect(result.code, result.stdout).toBe(1);
    return result.stderr;
  };

  it("refuses a context longer than the model was trained for, and one the cards would not hold, with the figures", async () => {
    const tooLong = await refused("model", "context", "chat", "64k");
    expect(tooLong).toMatch(/65536 tokens is more than chat was trained for \(32768\): \S+ was trained for 32768 tokens \(config\.json of .*\); nothing was changed/);
    const tooBig = await refused("model", "context", "big", "128k");
    expect(tooBig).toContain("a 131072-token context does not fit the cards big runs on: profile vllm");
    expect(tooBig).toMatch(/profile vllm \(vllm, 2 cards\): each of its 2 cards would need \d+\.\d GiB \(.* 20\.0 GiB KV cache for 131072 tokens\); the largest h100 card has 72\.0 GiB usable \(0\.90 of 80\.0 GiB\)/);
    expect((await cluster.model("chat")).context).toBe(8192);
  });

  it("refuses cards too small, a head count that does not divide, a count no node has, and ComfyUI on two cards", async () => {
    const tooSmall = await refused("model", "gpus", "big", "1");
    expect(tooSmall).toMatch(/1 card per replica would not hold big\/vllm at its 16384-token context: .*its card would need \d+\.\d GiB .*the largest h100 card has 72\.0 GiB usable/);
    const heads = await refused("model", "gpus", "chat", "3");
    expect(heads).toContain("vllm cannot split chat over 3 cards: 3 cards do not divide the 28 attention heads (it has 28 attention heads and 4 KV heads)");
    expect(heads).toContain("on these nodes that is 1, 2, 4");
    const none = await refused("model", "gpus", "chat", "8");
    expect(none).toContain("no node has 8 h100 cards on one fabric for chat/vllm: the largest, node-a, has 4 (h100 on nvl0)");
    const comfy = await refused("model", "gpus", "image", "2");
    expect(comfy).toContain("image/comfyui runs comfyui, which uses one card: it cannot take 2");
    expect((await cluster.model("chat")).profiles[0]?.gpus).toBe(1);
  });

  it("changes the context under a steady stream of requests with none failing, and records it", async () => {
    const [old] = await cluster.readyReplicas("chat", 1);
    const stream = steadyStream(cluster.server.url, "chat");
    const output = await cluster.ctl("model", "context", "chat", "16k", "--wait");
    const { served, errors } = await stream.stop();
    expect(errors).toEqual([]);
    expect(served).toBeGreaterThan(5);
    expect(output).toContain("chat: context 8192 tokens → 16384 tokens");
    expect(output).toContain("vllm (vllm): --max-model-len 8192 → 16384");
    expect(output).toContain("Restarting 1 replica");
    expect(output).toContain("chat is ready: 1 replica serving.");
    const [replacement] = await cluster.readyReplicas("chat", 1);
    expect(replacement?.id).not.toBe(old?.id);
    expect((await cluster.model("chat")).context).toBe(16384);
    const audit = await cluster.api<{ events: AuditEventView[] }>("GET", "/api/v1/audit?model=chat");
    const changed = audit.events.find((event) => event.action === "model-context-changed");
    expect(changed?.before).toMatchObject({ context: 8192 });
    expect(changed?.after).toMatchObject({ context: 16384 });
    const events = await cluster.events("chat");
    expect(events.find((event) => event.kind === "model-context-changed")?.message).toContain("changes chat: context 8192 → 16384 tokens");
    // The same context again changes nothing and restarts nothing.
    const again = JSON.parse(await cluster.ctl("model", "context", "chat", "16384", "--json")) as ModelChangeView;
    expect(again).toMatchObject({ replicas: 0, restart_before: null });
  });

  it("gives a model more cards under a steady stream of requests with none failing (surge)", async () => {
    const stream = steadyStream(cluster.server.url, "chat");
    const output = await cluster.ctl("model", "gpus", "chat", "2", "--wait");
    const { served, errors } = await stream.stop();
    expect(errors).toEqual([]);
    expect(served).toBeGreaterThan(5);
    expect(output).toContain("chat/vllm: 1 card → 2 cards per replica");
    expect(output).toContain("vllm (vllm): --tensor-parallel-size 1 → 2");
    const [replica] = await cluster.readyReplicas("chat", 1);
    expect(replica?.gpus).toHaveLength(2);
    const audit = await cluster.api<{ events: AuditEventView[] }>("GET", "/api/v1/audit?model=chat");
    expect(audit.events.some((event) => event.action === "model-gpus-changed")).toBe(true);
  });

  it("says when there is no room beside the old replicas, and --in-place stops each first", async () => {
    await cluster.addModel("wide", model("wide", "context: 8192\n", `engine: sglang, source: "${qwen}", gpu_class: a100, gpus: 2`), "--wait");
    const noRoom = await refused("model", "gpus", "wide", "4");
    expect(noRoom).toContain("no room to start a replica of wide on its profile sglang beside the ones it replaces");
    expect(noRoom).toContain("llmgw ctl model gpus wide 4 --in-place");
    expect((await cluster.model("wide")).profiles[0]?.gpus).toBe(2);
    const output = await cluster.ctl("model", "gpus", "wide", "4", "--in-place", "--wait");
    expect(output).toContain("sglang (sglang): --tp-size 2 → 4");
    expect(output).toContain("Restarting 1 replica in place");
    expect(output).toContain("wide is ready: 1 replica serving.");
    const [replica] = await waitFor(async () => {
      const list = (await cluster.replicas("wide")).filter((candidate) => candidate.state === "ready");
      return list.length === 1 && list[0]?.gpus.length === 4 ? list : undefined;
    }, 30_000, "wide on four cards");
    expect(replica?.node).toBe("node-b");
  });
});
