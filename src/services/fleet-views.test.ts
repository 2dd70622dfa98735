import fc from "fast-check";
import type { Selectable } from "kysely";
import { describe, expect, it } from "vitest";
import { readNodeRow, readReplicaRow } from "../store/fleet-rows.js";
import type { Database } from "../store/schema.js";
import { endpointAtNode, nodeView, replicaCountsOf, replicaView } from "./fleet-views.js";

/** Text a column could hold: anything, JSON of anything, or a near-valid report with one field wrong. */
const columnText = fc.oneof(
  fc.string(),
  fc.json(),
  fc.constantFrom("", "null", "[]", "{}", '{"cards":"x"}', "[1,2,-3]", '"ready"', "ready", "failed", "http://[::1"),
  fc.record({
    id: fc.string(),
    model: fc.string(),
    profile: fc.string(),
    engine: fc.constantFrom("vllm", "nope"),
    cards: fc.array(fc.integer({ min: -2, max: 8 })),
    state: fc.constantFrom("ready", "draining", "lost", "x"),
    endpoint: fc.oneof(fc.string(), fc.webUrl(), fc.constant("not a url")),
    since: fc.string(),
  }).map((value) => JSON.stringify(value)),
);

const nodeRow: fc.Arbitrary<Selectable<Database["nodes"]>> = fc.record({
  name: fc.string(),
  address: columnText,
  fabric: fc.string(),
  labels: columnText,
  inventory: columnText,
  credential_hash: fc.string(),
  joined_at: columnText,
  last_seen_at: columnText,
  fabric_network: fc.oneof(fc.constant(null), columnText, fc.constant('{"address":"10.0.0.2","interface":"ib0"}')),
});

const replicaRow: fc.Arbitrary<Selectable<Database["replicas"]>> = fc.record({
  id: fc.string(),
  node: fc.string(),
  model: fc.string(),
  profile: fc.string(),
  engine: fc.string(),
  cards: columnText,
  spec: fc.option(columnText),
  state: fc.oneof(fc.constantFrom("fetching", "starting", "ready", "draining", "stopped", "failed"), fc.string()),
  status: columnText,
  progress: fc.option(columnText),
  stop_requested: fc.integer(),
  created_at: columnText,
  updated_at: columnText,
});

describe("fleet views over stored rows", () => {
  it("answer for any text the node and replica columns hold", () => {
    fc.assert(
      fc.property(nodeRow, fc.array(replicaRow, { maxLength: 4 }), fc.constantFrom("ready", "settling", "lost") as fc.Arbitrary<"ready" | "settling" | "lost">, (rawNode, rawReplicas, state) => {
        const node = readNodeRow(rawNode);
        const replicas = rawReplicas.map(readReplicaRow);
        const shown = nodeView(node, state, replicas);
        const views = replicas.map((replica) => replicaView(replica, node, state));
        replicaCountsOf(views);
        // What the API sends must survive JSON: no undefined where a value is promised, no cycle.
        expect(JSON.parse(JSON.stringify(shown)).name).toBe(node.name);
        for (const view of views) expect(view.endpoint === null || URL.canParse(view.endpoint)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("shows an unreadable stored report as failed, never as ready", () => {
    const replica = readReplicaRow({ id: "r1", node: "n", model: "m", profile: "p", engine: "vllm", cards: "[0]", spec: null, state: "ready", status: "{", progress: null, stop_requested: 0, created_at: "", updated_at: "" });
    expect(replica.state).toBe("failed");
    expect(replicaView(replica, undefined, undefined)).toMatchObject({ state: "failed", endpoint: null, gpus: [0], reason: expect.stringContaining("cannot read") });
  });

  it("reads a fetch's progress from its column, from the report of a row written before that column, and drops one it cannot read", () => {
    const row = (status: Record<string, unknown>, progress: string | null) => ({
      id: "r1", node: "n", model: "m", profile: "p", engine: "vllm", cards: "[0]", spec: null, state: "fetching",
      status: JSON.stringify({ id: "r1", model: "m", profile: "p", engine: "vllm", cards: [0], state: "fetching", since: "2026-01-01T00:00:00.000Z", ...status }),
      progress, stop_requested: 0, created_at: "", updated_at: "",
    });
    const shown = (raw: ReturnType<typeof row>) => replicaView(readReplicaRow(raw), undefined, "ready").progress;
    expect(shown(row({}, JSON.stringify({ fraction: 0.5, bytes_done: 5, bytes_total: 10 })))).toEqual({ fraction: 0.5, bytes_done: 5, bytes_total: 10 });
    expect(shown(row({ progress: { fraction: 0.25, bytes_done: 1, bytes_total: 4 } }, null))).toEqual({ fraction: 0.25, bytes_done: 1, bytes_total: 4 });
    expect(shown(row({}, "{not json"))).toBeNull();
    expect(readReplicaRow(row({}, "{not json")).state).toBe("fetching");
  });

  it("moves an engine's endpoint to the node's host, and leaves out one that is not an http URL", () => {
    expect(endpointAtNode("http://127.0.0.1:41000", "http://10.0.0.5:7070")).toBe("http://10.0.0.5:41000");
    expect(endpointAtNode("not a url", "http://10.0.0.5:7070")).toBeUndefined();
    expect(endpointAtNode("file:///etc/passwd", "http://10.0.0.5:7070")).toBeUndefined();
    expect(endpointAtNode("http://127.0.0.1:41000", "garbage")).toBe("http://127.0.0.1:41000");
  });
});
