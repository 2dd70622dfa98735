import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeDeepSeekV3Checkpoint } from "../../src/demo/deepseek-v3-checkpoint.js";
import { startHubServer, type HubServer } from "../../src/hub/local-hub.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";
import type { ReplicaView } from "../../src/protocol/views.js";
import { chat, serverYaml, startCluster, steadyStream, type Cluster } from "../support/cluster.js";
import { waitFor } from "../support/fake-engine.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * DeepSeek-V3 as one replica over two nodes of eight H100s, with agents as
 * real processes and the simulated engine's real TCP rendezvous between its
 * members: placed, answering through the gateway, restarted by surge onto the
 * other two nodes, and replaced when one member's engine is killed with -9.
 */
describe("a replica over two nodes", () => {
  let hub: HubServer;
  let cluster: Cluster;
  const model = "deepseek-v3";

  const replicasOf = async () => (await cluster.api<{ replicas: ReplicaView[] }>("GET", "/api/v1/replicas")).replicas.filter((replica) => replica.model === model);
  const readyGang = async (not?: string) =>
    await waitFor(
      async () => (await replicasOf()).find((replica) => replica.id !== not && replica.state === "ready" && replica.members?.every((member) => member.state === "ready")),
      120_000,
      `a ready replica of ${model} over two nodes${not ? ` other than ${not}` : ""}`,
      250,
    );

  beforeAll(async () => {
    hub = await startHubServer({ repositories: { "deepseek-ai/DeepSeek-V3": await writeDeepSeekV3Checkpoint(temporaryDirectory("llmgw-gang-hub-")) } });
    const nodes = ["gpu-node-1", "gpu-node-2", "gpu-node-3", "gpu-node-4"];
    cluster = await startCluster(
      "llmgw-gang-",
      nodes,
      Object.fromEntries(nodes.map((node) => [node, "8xH100-80GB@ib0,cpu:64c/1024g"])),
      `${serverYaml}huggingface:\n  endpoint: ${hub.url}\n`,
      ["--fabric-address", "127.0.0.1"],
    );
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    await hub?.close();
  });

  let first: ReplicaView;

  it("places one replica across two nodes, lists its members by rank, and answers through the gateway", async () => {
    const added = await cluster.ctlRaw("model", "add", model, "--wait", "--timeout", "120s");
    expect(added.code, `${added.stdout}\n${added.stderr}`).toBe(0);
    first = await readyGang();
    expect(first.members?.map((member) => [member.rank, member.gpus.length])).toEqual([
      [0, 8],
      [1, 8],
    ]);
    expect(first.members?.[0]?.node).toBe(first.node);
    expect(new Set(first.members?.map((member) => member.node)).size).toBe(2);
    // One replica of the model, not one per member.
    expect((await replicasOf()).filter((replica) => replica.state !== "stopped")).toHaveLength(1);
    expect(await chat(cluster.server.url, model)).not.toBe("");

    const placed = (await cluster.events(model)).find((event) => event.kind === "replica-placed");
    const [leader, worker] = first.members ?? [];
    expect(placed?.message).toContain(`across ${leader?.node} (rank 0, cards 0,1,2,3,4,5,6,7), ${worker?.node} (rank 1, cards 0,1,2,3,4,5,6,7)`);
    // The node view shows each member's cards taken.
    const nodes = (await cluster.api<{ nodes: { name: string; fabric_network: { address: string } | null; gpus: { replica: string | null }[] }[] }>("GET", "/api/v1/nodes")).nodes;
    const workerNode = nodes.find((node) => node.name === worker?.node);
    expect(workerNode?.gpus.every((gpu) => gpu.replica !== null)).toBe(true);
    expect(workerNode?.fabric_network?.address).toBe("127.0.0.1");
  });

  it("restarts by surge: a whole second gang beside the first, then the first drained and every member stopped", async () => {
    const stream = steadyStream(cluster.server.url, model);
    const output = await cluster.ctl("restart", "--model", model, "--wait", "--timeout", "120s");
    const { served, errors } = await stream.stop();
    expect(output).toContain(model);
    expect(errors).toEqual([]);
    expect(served).toBeGreaterThan(0);
    const second = await readyGang(first.id);
    // The other two nodes: the first gang's cards were still held while the second started.
    expect(new Set([...(second.members ?? []), ...(first.members ?? [])].map((member) => member.node)).size).toBe(4);
    await waitFor(async () => !(await replicasOf()).some((replica) => replica.id === first.id), 30_000, "the first gang to be stopped", 250);
    for (const member of first.members ?? []) expect(await isProcessAlive(member.pid as number)).toBe(false);
    first = second;
  });

  it("fails the whole replica when one member's engine is killed with -9, stops the rest and places a new gang", async () => {
    const [leader, worker] = first.members ?? [];
    if (!leader?.pid || !worker?.pid) throw new Error("the gang's members have no pids");
    const client = new OpenAI({ baseURL: `${cluster.server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
    const stream = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Write a long story." }], max_tokens: 4000, stream: true });
    const read = (async () => {
      let chunks = 0;
      try {
        for await (const chunk of stream) {
          chunks += chunk.choices.length;
        }
        return { chunks, error: undefined };
      } catch (error) {
        return { chunks, error: (error as Error).message };
      }
    })();
    // Killed once the stream is under way.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    process.kill(worker.pid, "SIGKILL");
    const outcome = await read;
    expect(outcome.error, `the stream ended with ${outcome.chunks} chunks and no error`).toBeDefined();

    const replacement = await readyGang(first.id);
    expect(replacement.members).toHaveLength(2);
    // The leader was not left running alone, holding its cards.
    await waitFor(async () => !(await isProcessAlive(leader.pid as number)), 30_000, "the surviving leader to be stopped", 250);
    const failed = (await cluster.events(model)).find((event) => event.kind === "replica-failed" && event.replica === first.id);
    expect(failed?.message).toContain(`member rank 1 on ${worker.node} failed`);
    expect(await chat(cluster.server.url, model)).not.toBe("");
  });
});
