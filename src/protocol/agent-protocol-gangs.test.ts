import { describe, expect, it } from "vitest";
import { distributedSpecSchema, joinRequestSchema, replicaSpecSchema } from "./agent-protocol.js";

const spec = { id: "r-1", model: "dsv3", profile: "gang", engine: "vllm", source: "hf://deepseek-ai/DeepSeek-V3@main", cards: [0, 1, 2, 3, 4, 5, 6, 7] };

describe("the agent protocol's fields for replicas over several nodes", () => {
  it("reads a replica spec without them, as an older server sends it", () => {
    const parsed = replicaSpecSchema.safeParse(spec);
    expect(parsed.success).toBe(true);
    expect(parsed.data?.distributed).toBeUndefined();
  });

  it("reads a member's rank, the leader's address, the rendezvous port and the interface", () => {
    const distributed = { nodes: 2, rank: 1, leader_address: "10.0.0.1", port: 29500, network_interface: "ib0" };
    expect(replicaSpecSchema.parse({ ...spec, distributed }).distributed).toEqual(distributed);
  });

  it("refuses a gang of one node or a port out of range, naming the field", () => {
    const one = distributedSpecSchema.safeParse({ nodes: 1, rank: 0, leader_address: "10.0.0.1", port: 29500 });
    expect(one.success).toBe(false);
    expect(one.error?.issues[0]?.path).toEqual(["nodes"]);
    expect(distributedSpecSchema.safeParse({ nodes: 2, rank: 0, leader_address: "10.0.0.1", port: 70000 }).error?.issues[0]?.path).toEqual(["port"]);
  });

  it("leaves a join without a fabric address valid, and reads one when the agent reports it", () => {
    const join = {
      protocol: 1,
      join_token: "token-token-token",
      name: "gpu-node-3",
      address: "http://10.0.0.3:7070/",
      fabric: "ib0",
      labels: {},
      inventory: { gpus: [], memory_bytes: 1, cpu_cores: 1, engines: [] },
    };
    const without = joinRequestSchema.safeParse(join);
    const withNetwork = joinRequestSchema.safeParse({ ...join, fabric_network: { address: "10.0.0.3", interface: "ib0" } });
    expect(withNetwork.error?.issues ?? []).toEqual(without.error?.issues ?? []);
    if (withNetwork.success) expect(withNetwork.data.fabric_network).toEqual({ address: "10.0.0.3", interface: "ib0" });
  });
});
