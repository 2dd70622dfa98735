import { describe, expect, it } from "vitest";
import { replicaSpecSchema, type ReplicaSpecInput } from "../../protocol/agent-protocol.js";
import { isPortFree } from "../engine-process.js";
import { newReplica } from "./replica-record.js";
import { portsPromised, rendezvousPortNeed, reserveRendezvousPort } from "./rendezvous-port.js";

const spec = (overrides: Partial<ReplicaSpecInput> = {}) =>
  replicaSpecSchema.parse({ id: "r1", model: "big", profile: "two-nodes", engine: "vllm", source: "hf://org/big@main", cards: [0, 1], ...overrides });

describe("a gang leader's rendezvous port", () => {
  it("is reserved by the leader's agent when its spec leaves it out, taken as given when it names one, and none of a worker's or a one-node replica's business", () => {
    expect(rendezvousPortNeed(spec({ distributed: { nodes: 2, rank: 0, leader_address: "10.0.0.1" } }))).toBe("reserve");
    expect(rendezvousPortNeed(spec({ distributed: { nodes: 2, rank: 0, leader_address: "10.0.0.1", port: 29500 } }))).toBe(29500);
    expect(rendezvousPortNeed(spec({ distributed: { nodes: 2, rank: 1, leader_address: "10.0.0.1", port: 29500 } }))).toBeUndefined();
    expect(rendezvousPortNeed(spec())).toBeUndefined();
  });

  it("counts as promised, with each live replica's engine port, until its replica ends", () => {
    const leader = newReplica(spec(), "fetching");
    leader.rendezvousPort = 23001;
    const serving = newReplica(spec({ id: "r2" }), "ready");
    serving.port = 23002;
    const ended = newReplica(spec({ id: "r3" }), "failed");
    ended.port = 23003;
    ended.rendezvousPort = 23004;
    expect([...portsPromised([leader, serving, ended])].sort()).toEqual([23001, 23002]);
  });

  it("is a free port, never one already promised", async () => {
    const first = await reserveRendezvousPort(() => new Set());
    expect(await isPortFree(first)).toBe(true);
    // Every port of the range but one promised: the pick can only be that one, or one the kernel hands out.
    const promised = new Set<number>();
    for (let port = 10000; port < 33000; port += 1) if (port !== 23456) promised.add(port);
    for (let round = 0; round < 5; round += 1) expect(promised.has(await reserveRendezvousPort(() => promised))).toBe(false);
  });

  it("is picked again when another start promised the same port while it was being checked", async () => {
    /** What another start promised meanwhile: whatever this one picked. */
    class EveryPort extends Set<number> {
      override has(): boolean {
        return true;
      }
    }
    let asked = 0;
    const port = await reserveRendezvousPort(() => {
      asked += 1;
      return asked === 2 ? new EveryPort() : new Set<number>();
    });
    // Asked before the first pick, after it (taken meanwhile), before the second and after it.
    expect(asked).toBe(4);
    expect(await isPortFree(port)).toBe(true);
  });
});
