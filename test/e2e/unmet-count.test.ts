import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelView } from "../../src/protocol/views.js";
import { modelYaml, startCluster, type Cluster } from "../support/cluster.js";

/**
 * A count the fleet cannot meet: one node with two H100s, a model of one card
 * per replica scaled to three. The change says at once what will not fit, and
 * every view shows ready replicas against the three asked for, with the reason.
 */
describe("a replica count that cannot be met", () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster("llmgw-unmet-count-", ["node-a"], { "node-a": "2xH100-80GB@nvl0,cpu:16c/64g" });
    await cluster.addModel("chat", modelYaml("chat", ""), "--wait");
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("says what will not fit when scaled beyond the room, and shows 2/3 with the reason in ctl models, ctl model show and the API", async () => {
    const scaled = await cluster.ctlRaw("scale", "chat", "--min", "3");
    expect(scaled.code, scaled.stderr).toBe(0);
    expect(scaled.stdout).toContain("chat now scales min 3, max 3.");
    expect(scaled.stderr).toContain("warning: not every replica of chat fits now: 0 of 1 node: 1 has no free h100");
    await cluster.readyReplicas("chat", 2);
    const view = await cluster.model("chat");
    expect(view.replicas).toEqual({ ready: 2, desired: 3 });
    expect(view.placement).toEqual({ state: "unplaceable", reason: "0 of 1 node: 1 has no free h100" });
    const models = await cluster.ctl("models");
    expect(models).toMatch(/chat\s+runtime\s+degraded\s+2\/3\s/);
    expect(models).toContain("chat: unplaceable: 0 of 1 node: 1 has no free h100");
    const shown = await cluster.ctl("model", "show", "chat");
    expect(shown).toContain("degraded, 2 of 3 replicas ready");
    expect(shown).toContain("0 of 1 node: 1 has no free h100");
  }, 90_000);

  it("answers the forecast in the change's own answer, for tools", async () => {
    const answer = JSON.parse(await cluster.ctl("scale", "chat", "--min", "4", "--json")) as ModelView;
    expect(answer.scaling).toMatchObject({ min: 4, max: 4 });
    expect(answer.placement).toEqual({ state: "unplaceable", reason: "0 of 1 node: 1 has no free h100" });
    // Back within the room: nothing to warn of.
    const fits = await cluster.ctlRaw("scale", "chat", "--min", "2");
    expect(fits.stderr).not.toContain("warning");
  });
});
