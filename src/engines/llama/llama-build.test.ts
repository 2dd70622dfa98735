import { describe, expect, it } from "vitest";
import type { LlamaCppInventory } from "../../protocol/agent-protocol.js";
import { replicaLlamaCpp } from "../../services/fleet-views.js";
import { llamacppDriver } from "../drivers/llamacpp.js";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { builtinBuildFor, engineUsesCards, nodeDefaultBuild } from "./llama-build.js";
import { parseLlamaServerArguments } from "./llama-server-arguments.js";

/** What the built-in engine decides from the command line and environment the agent gives a replica on `cards`. */
function engineSees(cards: number[]) {
  const launch = llamacppDriver.build(testLaunchInput({ weightsPath: "/cache/m.gguf", cards, slots: 1 }));
  const args = parseLlamaServerArguments(launch.argv.slice(1), launch.env);
  return { args, visibleDevices: launch.env.CUDA_VISIBLE_DEVICES, usesCards: engineUsesCards(args.gpuLayers, launch.env.CUDA_VISIBLE_DEVICES) };
}

describe("which llama.cpp build the built-in engine loads", () => {
  it("loads the CUDA build on the cards a replica was given, every layer on them, split by layer", () => {
    const seen = engineSees([2, 3]);
    expect(seen.visibleDevices).toBe("2,3");
    expect(seen.args.gpuLayers).toBeGreaterThan(0);
    expect(seen.args.splitMode).toBe("layer");
    expect(seen.args.tensorSplit).toEqual([1, 1]);
    expect(seen.usesCards).toBe(true);
    expect(builtinBuildFor(2)).toBe("cuda");
  });

  it("loads the CPU build for a replica without cards, with no card visible to it", () => {
    const seen = engineSees([]);
    expect(seen.visibleDevices).toBe("");
    expect(seen.args.gpuLayers).toBe(0);
    expect(seen.usesCards).toBe(false);
    expect(builtinBuildFor(0)).toBe("cpu");
  });

  it("refuses a split mode other than by layer, by name, rather than split otherwise than asked", () => {
    expect(() => parseLlamaServerArguments(["-m", "m.gguf", "--split-mode", "row"])).toThrow(/--split-mode: the built-in engine splits over the cards by layer only; install llama-server/);
  });

  it("stays on the CPU when layers are asked on the GPU but no card is visible, or cards are visible and no layer is asked", () => {
    expect(engineUsesCards(999, "")).toBe(false);
    expect(engineUsesCards(999, undefined)).toBe(false);
    expect(engineUsesCards(0, "0")).toBe(false);
    expect(engineUsesCards(undefined, "0")).toBe(false);
  });

  it("says a node with NVIDIA cards runs the CUDA build when it is installed, and the CPU build otherwise", () => {
    expect(nodeDefaultBuild(4, ["cpu", "cuda", "vulkan"])).toBe("cuda");
    expect(nodeDefaultBuild(4, ["cpu"])).toBe("cpu");
    expect(nodeDefaultBuild(0, ["cpu", "cuda"])).toBe("cpu");
  });
});

describe("the llama.cpp a replica's view names", () => {
  const builtIn: LlamaCppInventory = { kind: "built-in", version: "3.21.1", builds: ["cpu", "cuda"], build: "cuda" };
  const node = (llamaCpp: LlamaCppInventory | undefined, simulated = false) => ({ inventory: { simulated, ...(llamaCpp ? { llama_cpp: llamaCpp } : {}) } }) as never;

  it("is the built-in engine's CUDA build on cards and its CPU build without", () => {
    expect(replicaLlamaCpp("llamacpp", 2, node(builtIn))).toEqual({ kind: "built-in", version: "3.21.1", build: "cuda" });
    expect(replicaLlamaCpp("llamacpp", 0, node(builtIn))).toEqual({ kind: "built-in", version: "3.21.1", build: "cpu" });
  });

  it("is llama-server with its version where the node has one", () => {
    const server: LlamaCppInventory = { kind: "llama-server", path: "/usr/local/bin/llama-server", version: "version: 4567 (abc1234)" };
    expect(replicaLlamaCpp("llamacpp", 1, node(server))).toEqual(server);
  });

  it("is none for another engine, a simulated node, or a node that does not say", () => {
    expect(replicaLlamaCpp("vllm", 1, node(builtIn))).toBeNull();
    expect(replicaLlamaCpp("llamacpp", 0, node(builtIn, true))).toBeNull();
    expect(replicaLlamaCpp("llamacpp", 0, node(undefined))).toBeNull();
    expect(replicaLlamaCpp("llamacpp", 0, undefined)).toBeNull();
  });
});
