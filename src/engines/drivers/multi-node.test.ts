import { describe, expect, it } from "vitest";
import { EngineCannotRun } from "../../errors/engine-errors.js";
import { comfyuiDriver } from "./comfyui.js";
import { llamacppDriver } from "./llamacpp.js";
import { sglangDriver } from "./sglang.js";
import { testLaunchInput } from "./test-launch-input.js";
import { trtllmDriver } from "./trtllm.js";
import { vllmDriver } from "./vllm.js";

const eightCards = [0, 1, 2, 3, 4, 5, 6, 7];
const member = (rank: number, networkInterface?: string) =>
  testLaunchInput({ cards: eightCards, distributed: { nodes: 2, rank, leaderAddress: "10.0.0.1", port: 29500, ...(networkInterface !== undefined ? { networkInterface } : {}) } });
const after = (argv: readonly string[], flag: string) => argv[argv.indexOf(flag) + 1];

describe("engine command lines for one replica over two nodes", () => {
  it("starts vLLM's leader with tensor parallel per node, one pipeline stage per node, and the rendezvous at its own address", () => {
    const { argv } = vllmDriver.build(member(0));
    expect(argv.slice(0, 3)).toEqual(["vllm", "serve", "/var/lib/llmgw/weights/qwen2.5-7b"]);
    expect(after(argv, "--tensor-parallel-size")).toBe("8");
    expect(argv.join(" ")).toContain("--pipeline-parallel-size 2 --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --master-port 29500");
    expect(argv).not.toContain("--headless");
  });

  it("starts vLLM's workers the same, with their rank and --headless", () => {
    const { argv } = vllmDriver.build(member(1));
    expect(argv.join(" ")).toContain("--tensor-parallel-size 8");
    expect(argv.join(" ")).toContain("--pipeline-parallel-size 2 --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29500 --headless");
  });

  it("gives a vLLM headless worker no health path, since it serves no HTTP, and keeps the leader's", () => {
    expect(vllmDriver.build(member(1)).healthPath).toBeUndefined();
    expect(vllmDriver.build(member(0)).healthPath).toBe("/health");
  });

  it("keeps /health for SGLang's workers, which serve it", () => {
    expect(sglangDriver.build(member(1)).healthPath).toBe("/health");
  });

  it("starts SGLang on every member as one tensor-parallel group of all cards", () => {
    for (const rank of [0, 1]) {
      const { argv } = sglangDriver.build(member(rank));
      expect(after(argv, "--tp-size")).toBe("16");
      expect(argv.join(" ")).toContain(`--nnodes 2 --node-rank ${rank} --dist-init-addr 10.0.0.1:29500`);
    }
  });

  it("points NCCL and Gloo at the fabric's interface when the agent reports one, and leaves them alone when not", () => {
    expect(vllmDriver.build(member(0, "ib0")).env).toMatchObject({ NCCL_SOCKET_IFNAME: "ib0", GLOO_SOCKET_IFNAME: "ib0", CUDA_VISIBLE_DEVICES: "0,1,2,3,4,5,6,7" });
    expect(sglangDriver.build(member(1, "ib0")).env).toMatchObject({ NCCL_SOCKET_IFNAME: "ib0", GLOO_SOCKET_IFNAME: "ib0" });
    expect(vllmDriver.build(member(0)).env).not.toHaveProperty("NCCL_SOCKET_IFNAME");
  });

  it("adds nothing distributed to a replica on one node", () => {
    const { argv } = vllmDriver.build(testLaunchInput({ cards: eightCards }));
    expect(argv).not.toContain("--nnodes");
    expect(after(sglangDriver.build(testLaunchInput({ cards: eightCards })).argv, "--tp-size")).toBe("8");
  });

  it("refuses a member's launch for the engines that cannot span nodes here", () => {
    for (const driver of [trtllmDriver, llamacppDriver, comfyuiDriver]) {
      expect(() => driver.build(member(0)), driver.engine).toThrow(EngineCannotRun);
      expect(() => driver.build(member(0)), driver.engine).toThrow(/cannot run one replica over 2 nodes here/);
    }
  });
});
