import { describe, expect, it } from "vitest";
import type { NodeView, ReplicaView } from "../../protocol/views.js";
import { describeNodes, describeReplicaState, replicaEngineText } from "./nodes-commands.js";

const GiB = 1024 ** 3;
const now = new Date().toISOString();

const node = (overrides: Partial<NodeView>): NodeView => ({
  name: "gpu-node-1",
  state: "ready",
  address: "http://127.0.0.1:4000",
  hostname: "host",
  fabric: "gpu-node-1",
  labels: {},
  gpus: [],
  memory_bytes: 256 * GiB,
  cpu_cores: 32,
  engines: ["vllm"],
  disk_free_bytes: 100 * GiB,
  simulated: true,
  joined_at: now,
  last_seen_at: now,
  replicas: [],
  cordoned: false,
  draining: false,
  ...overrides,
});

const card = (index: number, fabric: string, replica: string | null = null) => ({
  index,
  uuid: `GPU-${index}`,
  name: "NVIDIA H100 80GB HBM3",
  class: "h100",
  memory_bytes: 80 * GiB,
  memory_used_bytes: null,
  memory_foreign_bytes: null,
  fabric,
  replica,
});

const replica: ReplicaView = {
  id: "qwen-1",
  model: "qwen",
  profile: "h100",
  node: "gpu-node-1",
  engine: "vllm",
  gpus: [0],
  state: "ready",
  endpoint: "http://127.0.0.1:5000",
  progress: null,
  reason: null,
  pid: 42,
  adopted: false,
  since: now,
  created_at: now,
  arm: "stable",
  llama_cpp: null, members: null,
};

describe("ctl nodes", () => {
  it("names the fabric the cards are on, and what runs on each card", () => {
    const text = describeNodes([node({ gpus: [card(0, "nvl0", "qwen-1"), card(1, "nvl0")] })], [replica]);
    expect(text).toMatch(/^gpu-node-1  ready \(simulated\)  http:\/\/127\.0\.0\.1:4000  fabric nvl0  32 cores  256 GiB RAM/);
    expect(text).toMatch(/0\s+h100\s+80 GiB\s+nvl0\s+qwen \(qwen-1, ready\)/);
    expect(text).toMatch(/1\s+h100\s+80 GiB\s+nvl0\s+-/);
  });

  it("falls back to the node's fabric on a CPU-only node, and lists its CPU replicas", () => {
    const cpuReplica = { ...replica, id: "small-1", model: "small", gpus: [] };
    const text = describeNodes([node({ name: "cpu-node", fabric: "cpu-node" })], [{ ...cpuReplica, node: "cpu-node" }]);
    expect(text).toContain("fabric cpu-node");
    expect(text).toContain("no GPUs (CPU replicas only)");
    expect(text).toContain("cpu: small (small-1, ready)");
  });

  it("shows the release each node's agent runs, and an agent that does not say as 0.1.0", () => {
    expect(describeNodes([node({ agent_version: "0.2.0" })], [])).toMatch(/256 GiB RAM {2}100 GiB disk free {2}agent 0\.2\.0 {2}seen/);
    expect(describeNodes([node({ agent_version: null })], [])).toContain("agent 0.1.0 or older");
  });

  it("shows how far a fetch has come", () => {
    expect(describeReplicaState({ state: "fetching", progress: { fraction: 0.425, bytes_done: 4 * GiB, bytes_total: 10 * GiB } })).toBe("fetching 42% of 10 GiB");
  });
});

describe("ctl replicas' ENGINE column", () => {
  it("names the llama.cpp a llamacpp replica runs: the built-in engine and its build, or llama-server and its version", () => {
    expect(replicaEngineText({ engine: "llamacpp", llama_cpp: { kind: "built-in", version: "3.21.1", build: "cuda" } })).toBe("llamacpp (built-in 3.21.1, cuda build)");
    expect(replicaEngineText({ engine: "llamacpp", llama_cpp: { kind: "llama-server", path: "/usr/bin/llama-server", version: "version: 4567 (abc1234)" } })).toBe("llamacpp (llama-server 4567 (abc1234))");
    expect(replicaEngineText({ engine: "llamacpp", llama_cpp: { kind: "llama-server", path: "/usr/bin/llama-server", version: null } })).toBe("llamacpp (llama-server)");
    expect(replicaEngineText({ engine: "vllm", llama_cpp: null })).toBe("vllm");
  });
});
