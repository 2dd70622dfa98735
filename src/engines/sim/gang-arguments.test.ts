import { describe, expect, it } from "vitest";
import { sglangDriver } from "../drivers/sglang.js";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { vllmDriver } from "../drivers/vllm.js";
import { parseGangArguments } from "./gang-arguments.js";
import { parseEngineArgv } from "./parse-engine-argv.js";

const eightCards = [0, 1, 2, 3, 4, 5, 6, 7];
const member = (rank: number) => testLaunchInput({ cards: eightCards, distributed: { nodes: 2, rank, leaderAddress: "10.0.0.1", port: 29500 } });
// The agent runs `llmgw sim-engine --engine E -- ARGV` without the program name.
const argvOf = (argv: readonly string[]) => argv.slice(1);

describe("a gang member's place, read from the drivers' command lines", () => {
  it("reads vLLM's leader and headless worker", () => {
    expect(parseGangArguments("vllm", argvOf(vllmDriver.build(member(0)).argv))).toEqual({ nodes: 2, rank: 0, leaderAddress: "10.0.0.1", leaderPort: 29500, pipelineStages: 2 });
    expect(parseGangArguments("vllm", argvOf(vllmDriver.build(member(1)).argv))).toMatchObject({ rank: 1, leaderAddress: "10.0.0.1", leaderPort: 29500 });
    // The rest of the command line still reads as before: 8 cards of tensor parallel on each node.
    expect(parseEngineArgv("vllm", argvOf(vllmDriver.build(member(1)).argv)).cardCount).toBe(8);
  });

  it("reads SGLang's --dist-init-addr, with no pipeline", () => {
    expect(parseGangArguments("sglang", argvOf(sglangDriver.build(member(1)).argv))).toEqual({ nodes: 2, rank: 1, leaderAddress: "10.0.0.1", leaderPort: 29500, pipelineStages: 1 });
  });

  it("finds no gang on one node", () => {
    expect(parseGangArguments("vllm", argvOf(vllmDriver.build(testLaunchInput({ cards: eightCards })).argv))).toBeUndefined();
    expect(parseGangArguments("vllm", ["serve", "/w", "--port", "1", "--nnodes", "1"])).toBeUndefined();
    expect(parseGangArguments("llamacpp", ["--nnodes", "2"])).toBeUndefined();
  });

  it("refuses what the real engine would refuse, naming the flag", () => {
    const base = ["serve", "/w", "--port", "1", "--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port", "29500"];
    expect(() => parseGangArguments("vllm", [...base, "--node-rank", "1"])).toThrow(/node rank 1 needs --headless: only rank 0 serves the API/);
    expect(() => parseGangArguments("vllm", [...base, "--node-rank", "0", "--headless"])).toThrow(/rank 0 is the leader/);
    expect(() => parseGangArguments("vllm", [...base, "--node-rank", "2", "--headless"])).toThrow(/--node-rank needs a whole number from 0 to 1, got "2"/);
    expect(() => parseGangArguments("vllm", ["serve", "/w", "--nnodes", "2"])).toThrow(/needs --master-addr/);
    expect(() => parseGangArguments("sglang", ["--model-path", "/w", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.1"])).toThrow(/is not HOST:PORT/);
    expect(() => parseGangArguments("sglang", ["--model-path", "/w", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.1:0"])).toThrow(/port needs a whole number from 1/);
  });
});
