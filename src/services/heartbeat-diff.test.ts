import { describe, expect, it } from "vitest";
import type { ReplicaStatus } from "../protocol/agent-protocol.js";
import type { StoredReplica } from "../store/fleet-rows.js";
import { replicaStatus } from "../../test/support/replica-status.js";
import { heartbeatDiff } from "./heartbeat-diff.js";

const nowMs = Date.parse("2026-01-01T00:10:00Z");
const longAgo = "2026-01-01T00:00:00Z";

const status = (id: string, state: ReplicaStatus["state"], extra: Partial<ReplicaStatus> = {}) => replicaStatus(id, state, { since: longAgo, ...extra });

const stored = (reported: ReplicaStatus, extra: Partial<StoredReplica> = {}): StoredReplica => ({
  id: reported.id,
  node: "node-a",
  model: reported.model,
  profile: reported.profile,
  engine: reported.engine,
  cards: reported.cards,
  spec: null,
  state: reported.state,
  pending: false,
  status: reported,
  stop_requested: false,
  created_at: longAgo,
  updated_at: longAgo,
  ...extra,
});

const diff = (reported: ReplicaStatus[], rows: StoredReplica[]) => heartbeatDiff({ node: "node-a", reported, stored: rows, nowMs, missingGraceMs: 10_000 });

describe("heartbeatDiff", () => {
  it("writes nothing for a beat that reports what is stored, whatever the order of its keys", () => {
    const ready = status("r1", "ready", { endpoint: "http://127.0.0.1:41000", pid: 7 });
    const reordered = Object.fromEntries(Object.entries(ready).reverse()) as ReplicaStatus;
    expect(diff([reordered], [stored(ready)])).toEqual({ upserts: [], deletes: [], failures: [], stopsToSend: [], orphans: [], changesDecisions: false });
  });

  it("takes a key holding undefined for an absent one, as the stored JSON has it, and any other difference for a change", () => {
    const ready = status("r1", "ready", { endpoint: "http://127.0.0.1:41000" });
    expect(diff([{ ...ready, pid: undefined }], [stored(ready)]).upserts).toEqual([]);
    expect(diff([{ ...ready, pid: 8 }], [stored(ready)]).upserts.map((write) => write.id)).toEqual(["r1"]);
    expect(diff([{ ...ready, cards: [0, 1] }], [stored({ ...ready, cards: [0] })]).upserts.map((write) => write.id)).toEqual(["r1"]);
    expect(diff([ready], [stored({ ...ready, pid: 8 })]).changesDecisions).toBe(true);
  });

  it("writes a pending replica's first report even when it matches the row word for word, as the report is what clears pending", () => {
    const fetching = status("r1", "fetching");
    const writes = diff([fetching], [stored(fetching, { pending: true })]);
    expect(writes.upserts.map((write) => [write.id, write.status.state])).toEqual([["r1", "fetching"]]);
    expect(writes.changesDecisions).toBe(true);
  });

  it("writes a replica whose report changed, keeping its creation time and stop request", () => {
    const before = status("r1", "starting");
    const after = status("r1", "ready", { since: "2026-01-01T00:09:59Z" });
    const writes = diff([after], [stored(before, { stop_requested: true })]);
    expect(writes.upserts.map((write) => [write.id, write.status.state, write.created_at, write.stop_requested])).toEqual([["r1", "ready", longAgo, true]]);
  });

  it("writes a fetch's progress but says it changes no decision; a state, load or endpoint change does", () => {
    const fetching = status("r1", "fetching", { progress: { fraction: 0.1, bytes_done: 1, bytes_total: 10 } });
    const further = diff([{ ...fetching, progress: { fraction: 0.5, bytes_done: 5, bytes_total: 10 } }], [stored(fetching)]);
    expect(further.upserts).toHaveLength(1);
    expect(further.changesDecisions).toBe(false);
    expect(diff([{ ...fetching, state: "starting" }], [stored(fetching)]).changesDecisions).toBe(true);
    const ready = status("r2", "ready", { endpoint: "http://127.0.0.1:41000", load: { running: 0, waiting: 0 } });
    expect(diff([{ ...ready, load: { running: 3, waiting: 1 } }], [stored(ready)]).changesDecisions).toBe(true);
    expect(diff([{ ...ready, endpoint: "http://127.0.0.1:41001" }], [stored(ready)]).changesDecisions).toBe(true);
    expect(diff([status("r3", "stopped")], [stored(status("r3", "draining"))]).changesDecisions).toBe(true);
  });

  it("writes no row for a replica the server never placed: it is an orphan to stop, unless already draining", () => {
    const writes = diff([status("r2", "ready"), status("r3", "failed"), status("r4", "draining"), status("r5", "stopped")], []);
    expect(writes.upserts).toEqual([]);
    expect(writes.orphans.map((orphan) => orphan.id)).toEqual(["r2", "r3"]);
  });

  it("deletes the row of a replica its agent reports stopped, and ignores a stopped one it never had", () => {
    expect(diff([status("r1", "stopped"), status("r9", "stopped")], [stored(status("r1", "draining"))]).deletes).toEqual(["r1"]);
  });

  it("fails a replica the agent no longer reports, after the grace for a beat built before it started", () => {
    const old = stored(status("old", "ready"));
    const fresh = stored(status("fresh", "starting"), { created_at: new Date(nowMs - 2_000).toISOString() });
    const writes = diff([], [old, fresh]);
    expect(writes.failures).toHaveLength(1);
    expect(writes.failures[0]?.status).toMatchObject({ id: "old", state: "failed", reason: expect.stringContaining("no longer reports") });
  });

  it("clears a missing replica that was stopped while its node was lost, and leaves a failed one alone", () => {
    const writes = diff([], [stored(status("asked", "ready"), { stop_requested: true }), stored(status("dead", "failed"))]);
    expect(writes).toMatchObject({ deletes: ["asked"], failures: [] });
  });

  it("sends a stop for a replica stopped while its node was lost, once the node reports it running", () => {
    const running = status("r1", "ready");
    expect(diff([running], [stored(running, { stop_requested: true })]).stopsToSend).toEqual(["r1"]);
    const draining = status("r1", "draining");
    expect(diff([draining], [stored(running, { stop_requested: true })]).stopsToSend).toEqual([]);
  });
});
