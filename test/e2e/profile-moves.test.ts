import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type Cluster } from "../support/cluster.js";
import { waitFor } from "../support/fake-engine.js";

/**
 * The demo's shape as real processes: one node with a single H100 and a host
 * that can run llama.cpp, and a model whose first profile wants the card and
 * whose second runs on the CPU. A change must not move the model to its CPU
 * profile to make room, and the reconciler moves it back to the card when
 * the card is free.
 */
describe("a model keeps its profile, and moves back to its preferred one", () => {
  let cluster: Cluster;
  const chat = `name: chat\ncontext: 4096\nprofiles:\n  - { name: cards, engine: vllm, source: "hf://example/tiny@main", gpu_class: h100, gpus: 1 }\n  - { name: cpu, engine: llamacpp, source: "hf://example/tiny-GGUF@main/tiny.gguf", memory_gb: 1, cpu_cores: 1 }\n`;
  const filler = `name: filler\ncontext: 4096\nprofiles:\n  - { engine: vllm, source: "hf://example/tiny@main", gpu_class: h100, gpus: 1 }\n`;

  beforeAll(async () => {
    cluster = await startCluster("llmgw-profile-moves-", ["node-a"], { "node-a": "1xH100-80GB@nvl0,cpu:16c/64g" });
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("starts on the CPU while the card is taken, and moves back to the card by surge once it is free", async () => {
    await cluster.addModel("filler", filler, "--wait");
    await cluster.addModel("chat", chat, "--wait");
    const [onCpu] = await cluster.readyReplicas("chat", 1);
    expect(onCpu?.profile).toBe("cpu");
    await cluster.ctl("model", "remove", "filler");
    const [onCards] = await waitFor(async () => {
      const ready = (await cluster.replicas("chat")).filter((replica) => replica.state === "ready");
      return ready.length === 1 && ready[0]?.profile === "cards" ? ready : undefined;
    }, 60_000, "chat back on its card");
    expect(onCards?.id).not.toBe(onCpu?.id);
    const events = await cluster.events("chat");
    const promoted = events.find((event) => event.kind === "replica-promoted-profile");
    expect(promoted?.replica).toBe(onCpu?.id);
    expect(promoted?.message).toContain(`chat moved back to its preferred profile cards: replica ${onCards?.id} serves there now`);
    expect(events.find((event) => event.kind === "replica-placed" && event.replica === onCards?.id)?.message).toContain(`moving back to its preferred profile: replica ${onCpu?.id} on cpu gives way once it serves`);
  });

  it("refuses a restart with no room beside it on the card rather than moving to the CPU, and --in-place keeps the card", async () => {
    const [before] = await cluster.readyReplicas("chat", 1);
    expect(before?.profile).toBe("cards");
    const refused = await cluster.ctlRaw("restart", "--model", "chat");
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stderr).toContain("no room to start a replica of chat on its profile cards beside the ones it replaces: 0 of 1 node: 1 has no free h100");
    expect(refused.stderr).toContain("llmgw ctl restart --model chat --in-place");
    // Nothing was started beside it (the replica it replaced on the CPU may still be draining).
    const live = (await cluster.replicas("chat")).filter((replica) => !["stopped", "draining", "failed"].includes(replica.state));
    expect(live.map((replica) => [replica.id, replica.profile])).toEqual([[before?.id, "cards"]]);
    await cluster.ctl("restart", "--model", "chat", "--in-place", "--wait");
    const [after] = await cluster.readyReplicas("chat", 1);
    expect(after?.id).not.toBe(before?.id);
    expect(after?.profile).toBe("cards");
  });
});
