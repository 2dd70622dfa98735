import { describe, expect, it } from "vitest";
import { enginesWithAdapters, engineDrivers } from "../drivers/index.js";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import type { EngineDriver, EngineLaunchInput } from "../driver.js";
import { gpuOnlyEngines, singleCardEngines } from "../../catalog/schema.js";
import { parseEngineArgv } from "./parse-engine-argv.js";

function inputsFor(driver: EngineDriver): EngineLaunchInput[] {
  const inputs = [testLaunchInput({ port: 40001 }), testLaunchInput({ port: 40002, cards: [3], context: undefined, slots: 1 })];
  if (!singleCardEngines.includes(driver.engine)) {
    inputs.push(testLaunchInput({ port: 40003, cards: [0, 1, 2, 3], context: 8192, slots: 4 }));
  }
  if (!gpuOnlyEngines.includes(driver.engine)) {
    inputs.push(testLaunchInput({ port: 40004, cards: [], context: 4096, slots: 2, cpuCores: 8 }));
  }
  if (enginesWithAdapters.includes(driver.engine)) {
    inputs.push(
      testLaunchInput({
        port: 40005,
        cards: [1, 2],
        slots: 3,
        adapters: [
          { name: "qwen-sql", path: "/var/lib/llmgw/adapters/qwen-sql.gguf" },
          { name: "qwen-legal", path: "/var/lib/llmgw/adapters/qwen-legal.gguf", scale: 0.5 },
        ],
      }),
    );
  }
  return inputs;
}

describe.each(engineDrivers.map((driver) => [driver.engine, driver] as const))("reading back the %s command line", (engine, driver) => {
  for (const input of inputsFor(driver)) {
    it(`gives back port, name, context, cards, slots and adapters on cards [${input.cards.join(",")}]`, () => {
      const launch = driver.build(input);
      const parsed = parseEngineArgv(engine, launch.argv.slice(1), launch.env);
      expect(parsed.engine).toBe(engine);
      expect(parsed.port).toBe(input.port);
      expect(parsed.modelName).toBe(input.modelName);
      expect(parsed.cardCount).toBe(input.cards.length);
      if (engine === "comfyui") {
        expect(parsed.concurrency).toBe(1);
      } else {
        expect(parsed.weightsPath).toBe(input.weightsPath);
        expect(parsed.context).toBe(input.context);
      }
      if (engine === "llamacpp") expect(parsed.concurrency).toBe(input.slots);
      // No engine's command line carries an adapter's scale: each request picks its adapter and scale.
      expect(parsed.adapters).toEqual(input.adapters.map((adapter) => ({ name: adapter.name, path: adapter.path })));
    });
  }
});

describe("reading engine command lines", () => {
  it("reads llama-server's own --lora-scaled FNAME:SCALE form, and refuses the two-argument one", () => {
    const parsed = parseEngineArgv("llamacpp", ["--model", "/m.gguf", "--port", "4000", "--lora-scaled", "/a/legal.gguf:0.5,/a/sql.gguf:1"]);
    expect(parsed.adapters).toEqual([
      { name: "legal", path: "/a/legal.gguf", scale: 0.5 },
      { name: "sql", path: "/a/sql.gguf", scale: 1 },
    ]);
    expect(() => parseEngineArgv("llamacpp", ["--model", "/m.gguf", "--port", "4000", "--lora-scaled", "/a/legal.gguf", "0.5"])).toThrow(/is not FNAME:SCALE/);
  });

  it("lets a flag given again (the profile's args, last) replace the generated one", () => {
    const parsed = parseEngineArgv("vllm", ["serve", "/w", "--port", "1", "--max-model-len", "32768", "--enable-prefix-caching", "--max-model-len", "8192", "--max-num-seqs", "2"]);
    expect(parsed.context).toBe(8192);
    expect(parsed.concurrency).toBe(2);
  });

  it("reads --flag=value, short spellings and unknown flags with values", () => {
    const parsed = parseEngineArgv("llamacpp", ["-m", "/w/model.gguf", "--port=9", "-c", "4096", "-np", "2", "--temp", "0.7", "-ngl", "99", "-a", "tiny"]);
    expect(parsed).toMatchObject({ port: 9, modelName: "tiny", context: 2048, concurrency: 2, cardCount: 1 });
  });

  it("refuses a command line without a port, naming the flag", () => {
    expect(() => parseEngineArgv("sglang", ["-m", "sglang.launch_server", "--model-path", "/w"])).toThrow(/--port is missing/);
  });

  it("refuses a port that is not a number", () => {
    expect(() => parseEngineArgv("trtllm", ["/w", "--port", "eighty"])).toThrow(/--port needs a whole number/);
  });
});
