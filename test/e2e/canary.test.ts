import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HistoryView } from "../../src/protocol/version-views.js";
import type { CanaryView } from "../../src/protocol/canary-views.js";
import type { RoutingTable } from "../../src/protocol/routing-table.js";
import type { AuditEvent } from "../../src/store/audit-rows.js";
import type { EventView } from "../../src/protocol/views.js";
import { modelYaml, startCluster, type Cluster } from "../support/cluster.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { llmgwBin } from "../support/processes.js";

interface Answer {
  readonly arm: string | null;
  /** 200 when the client got an answer; the error's status otherwise (0 for a connection failure). */
  readonly status: number;
}

/** One chat completion through the server's /v1 with the official client: which arm answered, and how it went. */
async function ask(client: OpenAI, options: { user?: string; session?: string } = {}): Promise<Answer> {
  try {
    const { response } = await client.chat.completions
      .create(
        { model: "tiny", messages: [{ role: "user", content: "Say hello." }], max_tokens: 2, ...(options.user !== undefined ? { user: options.user } : {}) },
        options.session !== undefined ? { headers: { "x-session-id": options.session } } : {},
      )
      .withResponse();
    return { arm: response.headers.get("x-llmgw-arm"), status: 200 };
  } catch (error) {
    if (error instanceof APIError) return { arm: error.headers?.get("x-llmgw-arm") ?? null, status: error.status ?? 0 };
    throw error;
  }
}

/** `count` requests, `concurrency` at a time. */
async function askMany(client: OpenAI, count: number, concurrency = 8, options: (index: number) => { user?: string; session?: string } = () => ({})): Promise<Answer[]> {
  const answers: Answer[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        answers.push(await ask(client, options(index)));
      }
    }),
  );
  return answers;
}

/** Requests sent one after another by a few callers until stopped: the "steady stream" a change must not break. */
function steadyStream(client: OpenAI, callers = 3): { stop: () => Promise<Answer[]> } {
  let stopped = false;
  const answers: Answer[] = [];
  const running = Promise.all(
    Array.from({ length: callers }, async () => {
      while (!stopped) answers.push(await ask(client));
    }),
  );
  return {
    stop: async () => {
      stopped = true;
      await running;
      return answers;
    },
  };
}

describe("canaries with a server and two simulated agents as real processes", () => {
  let cluster: Cluster;
  let client: OpenAI;

  const canary = () => cluster.api<CanaryView>("GET", "/api/v1/models/tiny/canary");
  const routing = () => cluster.api<RoutingTable>("GET", "/api/v1/routing");
  const routedTiny = async () => (await routing()).models.find((model) => model.name === "tiny");

  /** Waits until the gateway routes to a ready canary replica with the canary's weight. */
  async function canaryServing(weight: number): Promise<void> {
    await waitFor(
      async () => {
        const tiny = await routedTiny();
        return tiny?.canary_weight === weight && tiny.replicas.some((replica) => replica.arm === "canary" && replica.state === "ready");
      },
      60_000,
      "a ready canary replica in the routing table",
    );
  }

  beforeAll(async () => {
    cluster = await startCluster("llmgw-canary-e2e-", ["node-a", "node-b"]);
    await cluster.addModel("tiny", modelYaml("tiny", "scaling: { min: 2, max: 2 }\n"), "--wait");
    await cluster.readyReplicas("tiny", 2);
    client = new OpenAI({ baseURL: `${cluster.server.url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30_000 });
  }, 120_000);

  afterAll(async () => {
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("starts canary replicas of another revision beside the stable ones and sends them the weight's share", async () => {
    const started = JSON.parse(await cluster.ctl("model", "canary", "tiny", "--to", "v2", "--weight", "10", "--json")) as CanaryView;
    expect(started).toMatchObject({ model: "tiny", revision: "v2", from_revision: "main", weight: 10, replicas: 1, state: "running", gate: null });
    await canaryServing(10);
    // The stable count is not reduced: two stable replicas and one canary.
    const replicas = (await cluster.replicas("tiny")).filter((replica) => replica.state === "ready");
    expect(replicas.filter((replica) => replica.arm === "stable")).toHaveLength(2);
    expect(replicas.filter((replica) => replica.arm === "canary")).toHaveLength(1);
    expect(await cluster.ctl("replicas", "--model", "tiny")).toContain("tiny (canary)");

    // 400 requests with no sticky key: the canary count is Binomial(400, 0.10), mean 40, standard
    // deviation 6. Four standard deviations either side (16..64) fail a correct split about once in
    // 16,000 runs, and still catch a split that ignores the weight (0 or 200) or inverts it (360).
    const answers = await askMany(client, 400);
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const onCanary = answers.filter((answer) => answer.arm === "canary").length;
    expect(answers.filter((answer) => answer.arm === "stable").length).toBe(400 - onCanary);
    expect(onCanary).toBeGreaterThanOrEqual(40 - 24);
    expect(onCanary).toBeLessThanOrEqual(40 + 24);

    // The server's gateway counted each arm: the same numbers `ctl model canaries` shows.
    const listed = JSON.parse(await cluster.ctl("model", "canaries", "--json")) as { canaries: CanaryView[] };
    const view = listed.canaries.find((candidate) => candidate.model === "tiny");
    expect(view?.arms.canary).toMatchObject({ requests: onCanary, errors: 0, ready_replicas: 1 });
    expect(view?.arms.stable).toMatchObject({ requests: 400 - onCanary, errors: 0, ready_replicas: 2 });
    expect(view?.arms.canary.p95_ms).toBeGreaterThan(0);
    const text = await cluster.ctl("model", "canaries");
    expect(text).toContain("tiny: canary of revision v2 (stable: main) — running, 10% of requests, 1 replica");
    expect(text).toMatch(new RegExp(`canary\\s+1\\s+${onCanary}\\s+0\\s+0\\.0%`));
  }, 120_000);

  it("keeps each user, and each x-session-id, on one arm", async () => {
    // 100 users, 3 requests each: every user's requests on one arm. At 10%, all 100 on stable has a
    // chance of 0.9^100 (about 1 in 38,000), so both arms are expected among them.
    const users = Array.from({ length: 100 }, (_, index) => `user-${index}`);
    const armsOf = new Map<string, Set<string | null>>();
    await Promise.all(
      users.map(async (user) => {
        const seen: Answer[] = [];
        for (let count = 0; count < 3; count += 1) seen.push(await ask(client, { user }));
        armsOf.set(user, new Set(seen.map((answer) => answer.arm)));
      }),
    );
    expect([...armsOf.values()].filter((arms) => arms.size !== 1)).toEqual([]);
    const chosen = new Set([...armsOf.values()].map((arms) => [...arms][0]));
    expect(chosen).toEqual(new Set(["stable", "canary"]));
    for (const session of ["s-1", "s-2", "s-3", "s-4"]) {
      const seen: Answer[] = [];
      for (let count = 0; count < 3; count += 1) seen.push(await ask(client, { session }));
      expect(new Set(seen.map((answer) => answer.arm)).size).toBe(1);
    }
  }, 60_000);

  it("counts what an extra `llmgw gateway` answers per arm, reported to the server", async () => {
    const gateway: ChildProcess = spawn(process.execPath, [llmgwBin, "gateway", "--server", cluster.server.url, "--listen", "127.0.0.1:0", "--auth", "open"], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LLMGW_TOKEN: cluster.server.token, LLMGW_SERVER: undefined },
    });
    let output = "";
    gateway.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    gateway.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      const url = await waitFor(async () => /listening on (http:\/\/[\d.:]+)/.exec(output)?.[1], 30_000, "the extra gateway to listen");
      const before = await canary();
      const extra = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30_000 });
      // The extra gateway follows the routing table: wait for it to split too before counting.
      await waitFor(async () => (await ask(extra)).arm !== null, 20_000, "the extra gateway to route by arm");
      const answers = [await ask(extra), ...(await askMany(extra, 59))];
      const onCanary = answers.filter((answer) => answer.arm === "canary").length;
      const after = await waitFor(
        async () => {
          const view = await canary();
          return view.arms.stable.requests + view.arms.canary.requests - (before.arms.stable.requests + before.arms.canary.requests) >= 61 ? view : undefined;
        },
        20_000,
        "the extra gateway's counts in the canary's numbers",
      );
      // Its requests (the first probe included) are in the server's numbers, each on the arm that answered it.
      expect(after.arms.canary.requests - before.arms.canary.requests).toBeGreaterThanOrEqual(onCanary);
      expect(after.arms.stable.requests + after.arms.canary.requests - before.arms.stable.requests - before.arms.canary.requests).toBe(61);
    } finally {
      killGroup(gateway.pid);
    }
  }, 60_000);

  it("refuses a second canary, a bad weight and an ending with no canary, saying what to do", async () => {
    const second = await cluster.ctlRaw("model", "canary", "tiny", "--to", "v3", "--weight", "5");
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain("tiny already has a canary of revision v2 (running)");
    expect(second.stderr).toContain("llmgw ctl model promote tiny");
    await expect(cluster.api("POST", "/api/v1/models/tiny/canary", { to: "v3", weight: 0 })).rejects.toThrow(/400.*weight: a percentage above 0 and at most 100/);
    await expect(cluster.api("POST", "/api/v1/models/tiny/canary", { to: "v3/x", weight: 5 })).rejects.toThrow(/400.*to: a revision/);
    // A gateway's per-arm report is outside input: a malformed one is refused whole, naming the field, and counts nothing.
    const before = (await canary()).arms.canary.requests;
    await expect(
      cluster.api("POST", "/api/v1/gateway/arms", { gateway: "g-1", slots: [{ model: "tiny", arm: "blue", start: 0, requests: 5, errors: 0, latency: [] }] }),
    ).rejects.toThrow(/400.*slots\[0\]\.arm/);
    await expect(cluster.api("POST", "/api/v1/gateway/arms", { gateway: "g-1", slots: [{ model: "tiny", arm: "canary", start: 0, requests: -1, errors: 0, latency: [] }] })).rejects.toThrow(/400/);
    expect((await canary()).arms.canary.requests).toBe(before);
    await expect(cluster.api("POST", "/api/v1/models/nothing/canary", { to: "v3", weight: 5 })).rejects.toThrow(/404.*model_not_found/);
    await expect(cluster.api("POST", "/api/v1/models/tiny/canary/gate", { min_requests: 5 })).rejects.toThrow(/400.*a gate needs a limit/);
    // A model whose weights come from a path has no revision to move to; one at the revision already, and an external one, are refused too.
    const idle = { min: 0, max: 0 };
    await cluster.api("POST", "/api/v1/models?source_check=false", { name: "plain", scaling: idle, profiles: [{ engine: "vllm", source: "/models/plain", gpu_class: "h100", gpus: 1 }] });
    await cluster.api("POST", "/api/v1/models?source_check=false", { name: "other", scaling: idle, profiles: [{ engine: "vllm", source: "hf://example/other@main", gpu_class: "h100", gpus: 1 }] });
    await cluster.api("POST", "/api/v1/models?source_check=false", { name: "remote", external: { base_url: "http://127.0.0.1:9/v1" } });
    await expect(cluster.api("POST", "/api/v1/models/plain/canary", { to: "v2", weight: 5 })).rejects.toThrow(/400.*plain does not follow a hub repository, so it has no revision v2 to move to/);
    await expect(cluster.api("POST", "/api/v1/models/other/canary", { to: "main", weight: 5 })).rejects.toThrow(/400.*other already runs revision main/);
    await expect(cluster.api("POST", "/api/v1/models/remote/canary", { to: "v2", weight: 5 })).rejects.toThrow(/400.*remote is an external model: it has no replicas to try a revision on/);
    for (const name of ["plain", "other", "remote"]) await fetch(`${cluster.server.url}/api/v1/models/${name}`, { method: "DELETE", headers: { authorization: `Bearer ${cluster.server.token}` } });
    const noCanary = await cluster.ctlRaw("model", "abort", "nothing");
    expect(noCanary.code).not.toBe(0);
    expect(noCanary.stderr).toContain("nothing has no canary to abort");
  });

  it("promotes by hand under a steady stream of requests with none failed: the catalog moves to the revision and stable rolls to it", async () => {
    const stream = steadyStream(client);
    const promoted = JSON.parse(await cluster.ctl("model", "promote", "tiny", "--json")) as CanaryView;
    expect(promoted.state).toBe("promoted");
    expect(promoted.decision).toMatch(/^promoted by hand by /);
    // The rollout: two replicas at v2 (the old canary, now stable, and one new), none at main, no canary.
    await waitFor(
      async () => {
        const events = await cluster.api<{ events: EventView[] }>("GET", "/api/v1/events?model=tiny&limit=1000");
        return events.events.some((event) => event.kind === "model-restarted");
      },
      60_000,
      "the stable replicas rolled to v2",
    );
    await waitFor(async () => {
      const tiny = await routedTiny();
      return tiny !== undefined && tiny.canary_weight === undefined && tiny.replicas.length === 2 && tiny.replicas.every((replica) => replica.state === "ready" && replica.arm === undefined);
    }, 30_000, "two stable replicas and no canary in the routing table");
    const answers = await stream.stop();
    expect(answers.length).toBeGreaterThan(10);
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);

    const model = await cluster.model("tiny");
    expect(JSON.stringify(model)).toContain("hf://example/tiny@v2");
    const audit = await cluster.api<{ events: AuditEvent[] }>("GET", "/api/v1/audit?model=tiny");
    const promotion = audit.events.find((event) => event.action === "model-canary-promoted");
    expect(JSON.stringify(promotion?.before)).toContain("hf://example/tiny@main");
    expect(JSON.stringify(promotion?.after)).toContain("hf://example/tiny@v2");
    expect(audit.events.map((event) => event.action)).toContain("model-canary-started");
    const kinds = (await cluster.api<{ events: EventView[] }>("GET", "/api/v1/events?model=tiny&limit=1000")).events.map((event) => event.kind);
    expect(kinds).toEqual(expect.arrayContaining(["canary-started", "canary-promoted", "model-restarting"]));
    // The promotion is a move in the version history, so `ctl model rollback` goes back to what stable ran.
    const history = JSON.parse(await cluster.ctl("model", "history", "tiny", "--json")) as HistoryView;
    expect(history.changes.at(-1)).toMatchObject({ kind: "canary-promote", from: "main", to: "v2" });
  }, 120_000);

  it("aborts a failing canary by its gate: clients see errors only from the canary's share before, and none after", async () => {
    await cluster.ctl("model", "canary", "tiny", "--to", "v3", "--weight", "20");
    await canaryServing(20);
    const targets = (await routedTiny())?.replicas.filter((replica) => replica.arm === "canary") ?? [];
    expect(targets.length).toBeGreaterThan(0);
    // The canary revision's engines are told to answer 500s, through the simulated engine's admin endpoint.
    for (const target of targets) {
      const fault = await fetch(`${target.endpoint}/sim/fault`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(target.api_key ? { authorization: `Bearer ${target.api_key}` } : {}) },
        body: JSON.stringify({ fault: "error-500" }),
      });
      expect(fault.status).toBe(200);
    }
    const gated = JSON.parse(await cluster.ctl("model", "gate", "tiny", "--max-error-rate", "10%", "--max-p95", "5000", "--min-requests", "10", "--window", "10m", "--json")) as CanaryView;
    expect(gated.gate).toEqual({ max_error_rate: 0.1, max_p95_ms: 5000, min_requests: 10, window: "10m" });

    const stream = steadyStream(client, 4);
    const ended = await waitFor(async () => {
      const view = await canary();
      return view.state === "aborted" ? view : undefined;
    }, 60_000, "the gate to abort the canary");
    const before = await stream.stop();
    expect(ended.decision).toMatch(/^aborted by its gate: error rate 100\.0% over the gate's 10\.0% \(\d+ errors in \d+ requests/);
    // Every failed request was the canary's; the stable arm failed none.
    expect(before.filter((answer) => answer.status !== 200).every((answer) => answer.status === 500 && answer.arm === "canary")).toBe(true);
    expect(before.filter((answer) => answer.arm === "stable" && answer.status !== 200)).toEqual([]);

    // Back to stable: once the table drops the canary, nothing fails.
    await waitFor(async () => (await routedTiny())?.canary_weight === undefined, 10_000, "the canary out of the routing table");
    const after = await askMany(client, 100);
    expect(after.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(after.every((answer) => answer.arm === null)).toBe(true);
    const events = (await cluster.api<{ events: EventView[] }>("GET", "/api/v1/events?model=tiny&limit=1000")).events;
    expect(events.find((event) => event.kind === "canary-aborted")?.message).toMatch(/error rate 100\.0%.*canary \d+\/\d+ errors.*stable 0\/\d+ errors/);
    // Its replica leaves and stops.
    await waitFor(async () => (await cluster.replicas("tiny")).every((replica) => replica.arm !== "canary"), 30_000, "the canary replica stopped");
  }, 120_000);

  it("promotes a canary by its gate once it has held over the window", async () => {
    await cluster.ctl("model", "canary", "tiny", "--to", "v4", "--weight", "50");
    await canaryServing(50);
    // The gate counts the requests inside its window: few enough that a slow, loaded test machine's one client still brings them.
    await cluster.ctl("model", "gate", "tiny", "--max-error-rate", "0.05", "--min-requests", "4", "--window", "3s");
    const stream = steadyStream(client);
    // Waits for the canary to end either way, so a wrong ending fails on its decision, with its numbers.
    const ended = await waitFor(async () => {
      const view = await canary();
      return view.state === "promoted" || view.state === "aborted" ? view : undefined;
    }, 60_000, "the gate to promote the canary");
    const answers = await stream.stop();
    expect(ended.decision).toMatch(/^promoted by its gate: held over 3 s: 0 errors in \d+ requests/);
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    await waitFor(async () => JSON.stringify(await cluster.model("tiny")).includes("hf://example/tiny@v4"), 10_000, "the catalog at v4");
  }, 120_000);
});
