import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { testLaunchInput } from "../../src/engines/drivers/test-launch-input.js";
import { llamacppDriver } from "../../src/engines/drivers/llamacpp.js";
import { vllmDriver } from "../../src/engines/drivers/vllm.js";
import { llmgwBin } from "../support/processes.js";

/**
 * The sim-engine command as the agent runs it: the built `llmgw` (npm test
 * builds dist/ first) as a real child process, so a crash is a real exit status.
 */
const entry = llmgwBin;

interface SimProcess {
  readonly child: ChildProcess;
  readonly output: { stdout: string; stderr: string };
  readonly exited: Promise<number | null>;
}

const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

function spawnSim(engine: string, argv: readonly string[], environment: Record<string, string>): SimProcess {
  const child = spawn(process.execPath, [entry, "sim-engine", "--engine", engine, "--", ...argv], {
    env: { PATH: process.env["PATH"] ?? "", LLMGW_SIM_SPEED: "100", ...environment },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const output = { stdout: "", stderr: "" };
  child.stdout?.on("data", (data: Buffer) => (output.stdout += data.toString()));
  child.stderr?.on("data", (data: Buffer) => (output.stderr += data.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output, exited };
}

/** The URL from the startup line; bounded so a broken engine fails the test instead of hanging it. */
async function serving(sim: SimProcess): Promise<string> {
  for (let attempt = 0; attempt < 1200; attempt += 1) {
    const match = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(sim.output.stdout);
    if (match?.[1] !== undefined) return match[1];
    if (sim.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`the simulated engine never said where it serves:\n${sim.output.stdout}\n${sim.output.stderr}`);
}

const vllmLaunch = vllmDriver.build(testLaunchInput({ port: 0, cards: [2, 3] }));

describe("llmgw sim-engine as a process", () => {
  it("serves the driver's command line with the driver's environment, and exits 0 on SIGTERM", async () => {
    const sim = spawnSim("vllm", vllmLaunch.argv.slice(1), { ...vllmLaunch.env });
    const url = await serving(sim);
    expect(sim.output.stdout).toContain('simulated vllm serving "qwen2.5-7b"');
    expect(sim.output.stdout).toContain("cards [2,3]");
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: "qwen2.5-7b", messages: [{ role: "user", content: "over a pipe" }], stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text.split("\n\n")[0]).toBe("Simulated answer from qwen2.5-7b: over a pipe");
    sim.child.kill("SIGTERM");
    expect(await sim.exited).toBe(0);
    expect(sim.output.stdout).toMatch(/POST \/v1\/chat\/completions model=qwen2.5-7b stream=true/);
  });

  it("exits 134 after the requests LLMGW_SIM_FAULT=crash-after:1 allows", async () => {
    const launch = llamacppDriver.build(testLaunchInput({ port: 0, cards: [], slots: 2, context: 2048, cpuCores: 4 }));
    const sim = spawnSim("llamacpp", launch.argv.slice(1), { ...launch.env, LLMGW_SIM_FAULT: "crash-after:1" });
    const client = new OpenAI({ baseURL: `${await serving(sim)}/v1`, apiKey: "unused", maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: "qwen2.5-7b", messages: [{ role: "user", content: "last words" }] });
    expect(answer.choices[0]?.message.content?.split("\n\n")[0]).toBe("Simulated answer from qwen2.5-7b: last words");
    expect(await sim.exited).toBe(134);
    expect(sim.output.stdout).toContain("simulated crash (fault crash-after:1)");
  });

  it("exits 134 when told to crash now by POST /sim/fault", async () => {
    const sim = spawnSim("vllm", vllmLaunch.argv.slice(1), { ...vllmLaunch.env });
    const url = await serving(sim);
    const response = await fetch(`${url}/sim/fault`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ fault: "crash-now" }) });
    expect(response.status).toBe(200);
    expect(await sim.exited).toBe(134);
  });

  it("exits 134 at once with LLMGW_SIM_FAULT=crash-now, and 1 during load with fail-load after its loading line", async () => {
    const crashing = spawnSim("vllm", vllmLaunch.argv.slice(1), { ...vllmLaunch.env, LLMGW_SIM_FAULT: "crash-now" });
    expect(await crashing.exited).toBe(134);
    const failing = spawnSim("vllm", vllmLaunch.argv.slice(1), { ...vllmLaunch.env, LLMGW_SIM_FAULT: "fail-load" });
    expect(await failing.exited).toBe(1);
    expect(failing.output.stdout).toMatch(/loading "qwen2.5-7b" from \/var\/lib\/llmgw\/weights\/qwen2.5-7b\n.*simulated failure while loading/);
  });

  it("exits 1 naming the problem when its port is taken or its command line is unreadable", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const address = blocker.address();
    const takenPort = typeof address === "object" && address !== null ? address.port : 0;
    try {
      const launch = vllmDriver.build(testLaunchInput({ port: takenPort }));
      const sim = spawnSim("vllm", launch.argv.slice(1), { ...launch.env });
      expect(await sim.exited).toBe(1);
      expect(sim.output.stderr).toMatch(/cannot start: .*EADDRINUSE|cannot start: .*already in use/);
    } finally {
      blocker.close();
    }
    const unreadable = spawnSim("sglang", ["-m", "sglang.launch_server", "--model-path", "/w"], {});
    expect(await unreadable.exited).toBe(1);
    expect(unreadable.output.stderr).toContain("--port is missing");
  });

  it("refuses an engine it does not know", async () => {
    const sim = spawnSim("tgi", ["--port", "1"], {});
    expect(await sim.exited).not.toBe(0);
    expect(sim.output.stderr).toMatch(/one of vllm, sglang, trtllm, llamacpp, comfyui/);
  });
});
