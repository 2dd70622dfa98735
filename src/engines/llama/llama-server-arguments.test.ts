import { describe, expect, it } from "vitest";
import { llamacppDriver } from "../drivers/llamacpp.js";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { parseLlamaServerArguments } from "./llama-server-arguments.js";

describe("llama-server's command line as the built-in engine reads it", () => {
  it("reads the argv the llamacpp driver builds, unchanged, with the key from LLAMA_API_KEY", () => {
    const launch = llamacppDriver.build(
      testLaunchInput({
        modelName: "tiny",
        weightsPath: "/cache/tiny.gguf",
        port: 4000,
        cards: [0, 1],
        slots: 3,
        context: 1024,
        cpuCores: 2,
        apiKey: "secret",
        adapters: [
          { name: "a", path: "/cache/a.gguf" },
          { name: "b", path: "/cache/b.gguf", scale: 0.5 },
        ],
      }),
    );
    const parsed = parseLlamaServerArguments(launch.argv.slice(1), launch.env);
    expect(parsed).toMatchObject({
      model: "/cache/tiny.gguf",
      alias: "tiny",
      port: 4000,
      contextSize: 3072,
      parallel: 3,
      threads: 2,
      gpuLayers: 999,
      tensorSplit: [1, 1],
      apiKey: "secret",
      embedding: false,
      adaptersUnapplied: true,
      adapters: [
        { path: "/cache/a.gguf", scale: 0 },
        { path: "/cache/b.gguf", scale: 0 },
      ],
    });
  });

  it("keeps --lora and --lora-scaled in the order given, each at its scale", () => {
    const parsed = parseLlamaServerArguments(["-m", "m.gguf", "--lora-scaled", "x.gguf", "0.25", "--lora", "y.gguf", "--embeddings", "--ctx-size=512"]);
    expect(parsed.adapters).toEqual([
      { path: "x.gguf", scale: 0.25 },
      { path: "y.gguf", scale: 1 },
    ]);
    expect(parsed.embedding).toBe(true);
    expect(parsed.contextSize).toBe(512);
  });

  it("lets a later flag replace an earlier one, as a profile's args override the driver's", () => {
    expect(parseLlamaServerArguments(["--model", "m.gguf", "--parallel", "2", "--parallel", "5"]).parallel).toBe(5);
  });

  it.each([
    [["--model", "m.gguf", "--flash-attn"], "it does not take --flash-attn"],
    [["--model", "m.gguf", "stray"], 'unexpected argument "stray"'],
    [["--model", "m.gguf", "--parallel", "zero"], "--parallel"],
    [["--model", "m.gguf", "--parallel", "0"], "--parallel"],
    [["--model", "m.gguf", "--ctx-size"], "--ctx-size needs a value"],
    [["--model", "m.gguf", "--lora-scaled", "x.gguf"], "--lora-scaled takes a file and a scale"],
    [["--model", "m.gguf", "--metrics=yes"], "--metrics takes no value"],
    [["--port", "80"], "--model"],
  ])("refuses %j, naming the flag", (argv, message) => {
    expect(() => parseLlamaServerArguments(argv)).toThrow(message);
    try {
      parseLlamaServerArguments(argv);
    } catch (error) {
      expect((error as { hint?: string }).hint).toContain("install llama-server");
    }
  });

  it("bounds the queue at 64 per slot unless LLMGW_LLAMA_QUEUE says otherwise, and refuses a bad bound", () => {
    expect(parseLlamaServerArguments(["-m", "m.gguf", "-np", "2"]).queueLimit).toBe(128);
    expect(parseLlamaServerArguments(["-m", "m.gguf"], { LLMGW_LLAMA_QUEUE: "0" }).queueLimit).toBe(0);
    expect(() => parseLlamaServerArguments(["-m", "m.gguf"], { LLMGW_LLAMA_QUEUE: "-1" })).toThrow("LLMGW_LLAMA_QUEUE must be a whole number");
  });
});
