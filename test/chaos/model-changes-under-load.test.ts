import { rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointTensors, writeSyntheticCheckpoint } from "../../src/plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../../src/plan/testing/fixtures.js";
import type { ReplicaView } from "../../src/protocol/views.js";
import { startCluster, type Cluster } from "../support/cluster.js";
import { reportChaos } from "./chaos-report.js";
import { seconds, SteadyLoad, type LoadResult } from "./steady-load.js";

/**
 * The changes that replace a model's replicas, each under a steady load
 * through the gateway (half streamed): a restart, a context change and a card
 * change, each with `--wait`. Each surges (the new replica starts beside the
 * old, which leaves the routing table before it drains), so not one request
 * may fail. The model has one replica, the hardest case: there is no other
 * to fall back on. Its source is a header-only checkpoint of a real config, so
 * the server reads its context and heads as from a download, and the
 * simulated engine decodes at the speed the planner gives it.
 */

/** Answers before each change, and after it finished, so the change lands amid a steady load. */
const phase = 40;

describe("chaos: a model's replicas replaced under load", () => {
  let cluster: Cluster;
  let load: SteadyLoad | undefined;

  beforeAll(async () => {
    // Four cards a node: room beside the replica for a surge at two cards.
    cluster = await startCluster("llmgw-chaos-changes-", ["node-a", "node-b"], { "node-a": "4xH100-80GB@nvl0,cpu:16c/64g", "node-b": "4xH100-80GB@nvl1,cpu:16c/64g" });
    const qwen = path.join(cluster.directory, "Qwen2.5-7B-Instruct");
    await writeSyntheticCheckpoint(qwen, fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
    await cluster.addModel("chat", `name: chat\ncontext: 8192\nprofiles:\n  - { engine: vllm, source: "${qwen}", gpu_class: h100, gpus: 1 }\n`, "--wait");
    await cluster.readyReplicas("chat", 1);
  }, 120_000);

  afterAll(async () => {
    await load?.stop();
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  const underLoad = async (scenario: string, command: readonly string[], check: (after: ReplicaView) => void) => {
    const [before] = await cluster.readyReplicas("chat", 1);
    const steady = (load = new SteadyLoad({ baseURL: `${cluster.server.url}/v1`, model: "chat", concurrency: 4 }));
    let startedAt = 0;
    let doneAt: number | undefined;
    let output = "";
    let result: LoadResult;
    try {
      await steady.until(() => steady.succeeded >= phase, `${phase} answers before the change`);
      startedAt = Date.now();
      output = await cluster.ctl(...command);
      doneAt = Date.now();
      const after = doneAt;
      await steady.until(() => steady.succeededSince(after) >= phase, `${phase} answers after the change`);
    } finally {
      result = await steady.stop();
    }
    const [after] = await cluster.readyReplicas("chat", 1);
    reportChaos({
      scenario,
      sent: result.sent,
      succeeded: result.succeeded,
      failed: result.failed,
      reasons: result.failures.reasons,
      recovery: `none needed (the change took ${seconds(startedAt, doneAt)})`,
      notes: `\`ctl ${command.join(" ")}\`: replica ${before?.id} (${before?.gpus.length} card(s)) replaced by ${after?.id} (${after?.gpus.length} card(s))`,
    });
    expect(output).toContain("chat is ready: 1 replica serving.");
    expect(result.failed, JSON.stringify([...result.failures.reasons])).toBe(0);
    expect(after?.id).not.toBe(before?.id);
    check(after as ReplicaView);
  };

  it("restarts a model under load without failing a request", async () => {
    await underLoad("restart a model (surge)", ["restart", "--model", "chat", "--wait"], () => undefined);
  }, 180_000);

  it("changes a model's context under load without failing a request", async () => {
    await underLoad("change a model's context, 8k → 16k", ["model", "context", "chat", "16k", "--wait"], () => undefined);
    expect((await cluster.model("chat")).context).toBe(16384);
  }, 180_000);

  it("gives a model more cards under load without failing a request", async () => {
    await underLoad("change a model's cards, 1 → 2", ["model", "gpus", "chat", "2", "--wait"], (after) => expect(after.gpus).toHaveLength(2));
  }, 180_000);
});
