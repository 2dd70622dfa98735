import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DryRunAnswer } from "../../src/protocol/dry-run.js";
import { modelYaml, startCluster, type Cluster } from "../support/cluster.js";

describe("ctl --dry-run against a server with two simulated agents", () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster("llmgw-dry-run-e2e-", ["node-a", "node-b"]);
    await cluster.addModel("tiny", modelYaml("tiny", ""), "--wait");
  }, 90_000);

  afterAll(async () => {
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("`model scale --min 2 --dry-run` names the node and card of the new replica, and changes nothing", async () => {
    const [running] = await cluster.readyReplicas("tiny", 1);
    const output = await cluster.ctl("model", "scale", "tiny", "--min", "2", "--dry-run");
    expect(output).toMatch(/^Dry run: nothing was changed\./);
    const started = /start a replica of tiny \(vllm, standard\) on (node-[ab]), card (\d)/.exec(output);
    expect(started, output).not.toBeNull();
    // Not the card the running replica holds.
    expect(`${started?.[1]}:${started?.[2]}`).not.toBe(`${running?.node}:${running?.gpus.join(",")}`);
    expect(output).toContain("engine arguments: ");
    expect(output).toContain("--max-model-len 4096");
    expect(output).toMatch(/In force after the change:\n {2}tiny: standard, scaling 2\.\.2/);

    const json = JSON.parse(await cluster.ctl("model", "scale", "tiny", "--min", "2", "--dry-run", "--json")) as DryRunAnswer<{ scaling: { min: number } }>;
    expect(json.dry_run).toBe(true);
    expect(json.outcome.scaling.min).toBe(2);
    expect(json.changes.find((change) => change.kind === "replica-start")).toMatchObject({ model: "tiny", node: started?.[1], cards: [Number(started?.[2])] });

    // Nothing changed: the catalog, the replicas, the audit log.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await cluster.model("tiny")).scaling.min).toBe(1);
    expect((await cluster.replicas("tiny")).map((replica) => replica.id)).toEqual([running?.id]);
    expect(await cluster.ctl("audit")).not.toContain("model-scaled");
  });

  it("shows a critical model preempting an opportunistic one on a full fleet, and adds nothing", async () => {
    await cluster.addModel("filler", modelYaml("filler", "class: opportunistic\nscaling: { min: 3 }\n"), "--wait");
    await cluster.readyReplicas("filler", 3);
    const file = `${cluster.directory}/vip.yaml`;
    const { writeFileSync } = await import("node:fs");
    writeFileSync(file, modelYaml("vip", "class: critical\n"));
    const output = await cluster.ctl("model", "add", "-f", file, "--no-source-check", "--dry-run");
    expect(output).toMatch(/^Dry run: nothing was changed\./);
    expect(output).toContain("add vip to the catalog");
    expect(output).toMatch(/replica filler-[0-9a-f]{6} of filler \(opportunistic\) on node-[ab], card \d, leaves routing and stops: preempted by vip \(critical\)/);
    expect(output).toMatch(/start a replica of vip \(vllm, critical\) on node-[ab], card \d/);
    // The card vip would take is the one the preempted replica frees.
    const victim = /of filler \(opportunistic\) on (node-[ab]), card (\d)/.exec(output);
    const start = /start a replica of vip \(vllm, critical\) on (node-[ab]), card (\d)/.exec(output);
    expect(start?.slice(1)).toEqual(victim?.slice(1));
    const models = (await cluster.api<{ models: { name: string }[] }>("GET", "/api/v1/models")).models.map((model) => model.name);
    expect(models).not.toContain("vip");
    expect(await cluster.replicas("filler")).toHaveLength(3);
  });

  it("prints a refused dry run as the real command's refusal", async () => {
    const dry = await cluster.ctlRaw("model", "scale", "nothing-here", "--min", "2", "--dry-run");
    const real = await cluster.ctlRaw("model", "scale", "nothing-here", "--min", "2");
    expect(dry.code).toBe(1);
    expect(dry.stderr).toBe(real.stderr);
    expect(dry.stderr).toContain("nothing-here");
  });
});
