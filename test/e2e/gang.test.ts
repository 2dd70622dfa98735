import { randomUUID } from "node:crypto";
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
      // A deadline that outlasts an agent's backoff while the server restarts: no node is lost meanwhile.
      `${serverYaml.replace("heartbeat_deadline: 4s", "heartbeat_deadline: 15s")}huggingface:\n  endpoint: ${hub.url}\n`,
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

  it("keeps every member through a kill -9 of each agent and a restart of the server: the same replica, the same engines", async () => {
    const before = first.members?.map((member) => [member.node, member.pid]);
    for (const member of first.members ?? []) {
      await cluster.killAgent(member.node);
      cluster.startAgent(member.node, "8xH100-80GB@ib0,cpu:64c/1024g");
    }
    const adopted = await waitFor(
      async () => (await replicasOf()).find((replica) => replica.id === first.id && replica.adopted && replica.state === "ready"),
      45_000,
      "the gang adopted by its restarted agents",
      250,
    );
    expect(adopted.members?.map((member) => [member.node, member.pid])).toEqual(before);
    await cluster.server.stop();
    await cluster.startServer();
    const kept = await waitFor(
      async () => (await replicasOf()).find((replica) => replica.id === first.id && replica.adopted && replica.state === "ready" && replica.members?.every((member) => member.state === "ready")),
      45_000,
      "the gang kept by the restarted server",
      250,
    ).catch(async (error: unknown) => {
      throw new Error(`${(error as Error).message}: ${JSON.stringify(await replicasOf())}\n${JSON.stringify(await cluster.events(model))}`);
    });
    expect(kept.members?.map((member) => [member.node, member.pid])).toEqual(before);
    expect(await chat(cluster.server.url, model)).not.toBe("");
  }, 120_000);

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

  it("under steady load on two gangs, a worker killed with -9 fails only the streams its gang had started", async () => {
    await cluster.ctl("scale", model, "--min", "2", "--max", "2");
    const gangs = await waitFor(
      async () => {
        const ready = (await replicasOf()).filter((replica) => replica.state === "ready" && replica.members?.length === 2);
        return ready.length === 2 ? ready : undefined;
      },
      120_000,
      "two ready gangs",
      250,
    );
    // The gateway's routing table follows the fleet within a second: both gangs are routed to after it.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const client = new OpenAI({ baseURL: `${cluster.server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
    const steady = steadyStream(cluster.server.url, model);
    // Streams spread over both gangs by the gateway.
    // Each its own prompt: cache-aware routing would send one prompt's streams all to the gang that holds its prefix.
    const began = Date.now();
    const streams = Array.from({ length: 6 }, async (_, index) => {
      try {
        // vLLM's ignore_eos: every stream runs its whole max_tokens (about four seconds at the pipeline's pace).
        const body = { model, messages: [{ role: "user", content: `${index} ${randomUUID()}: count slowly.` }], max_tokens: 150, stream: true, ignore_eos: true };
        const stream = await client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsStreaming);
        let chunks = 0;
        for await (const chunk of stream) chunks += chunk.choices.length;
        return `completed ${chunks} in ${Date.now() - began} ms`;
      } catch (error) {
        return `failed ${(error as Error).message} in ${Date.now() - began} ms`;
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const victim = gangs[0]?.members?.[1];
    if (!victim?.pid) throw new Error("the gang's worker has no pid");
    process.kill(victim.pid, "SIGKILL");
    const outcomes = await Promise.all(streams);
    // The broken gang's streams end with an error; the other gang's run to their end.
    expect(outcomes.some((outcome) => outcome.startsWith("failed")), outcomes.join("; ")).toBe(true);
    for (const outcome of outcomes.filter((each) => each.startsWith("failed"))) expect(outcome).toContain("the gang is broken");
    expect(outcomes.some((outcome) => outcome.startsWith("completed")), outcomes.join("; ")).toBe(true);
    await readyGang(gangs[0]?.id);
    const { served, errors } = await steady.stop();
    // A request fails only where the broken gang was answering it; those on the other gang never do.
    for (const error of errors) expect(error).toContain("the gang is broken");
    expect(served).toBeGreaterThan(0);
  }, 180_000);
});
