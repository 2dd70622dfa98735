import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { collectInventory, detectEngines, findProgram } from "./inventory.js";

let directory: string;
let bin: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-inventory-"));
  bin = path.join(directory, "bin");
  await mkdir(bin);
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function program(name: string, script = "#!/bin/sh\nexit 0\n"): Promise<void> {
  await writeFile(path.join(bin, name), script);
  await chmod(path.join(bin, name), 0o755);
}

describe("inventory", () => {
  it("finds engines on PATH and ComfyUI at its configured checkout", async () => {
    await program("vllm");
    await program("llama-server");
    await writeFile(path.join(bin, "trtllm-serve"), "not executable");
    const comfy = path.join(directory, "ComfyUI");
    await mkdir(comfy);
    await writeFile(path.join(comfy, "main.py"), "");
    const engines = await detectEngines({ comfyui: comfy }, bin);
    expect(engines.filter((engine) => engine !== "sglang")).toEqual(["vllm", "llamacpp", "comfyui"]);
    expect(await findProgram("trtllm-serve", bin)).toBeUndefined();
  });

  it("reads the cards from nvidia-smi on PATH", async () => {
    await program("nvidia-smi", "#!/bin/sh\necho '0, GPU-aaa, NVIDIA L40S, 46068, 10'\necho '1, GPU-bbb, NVIDIA L40S, 46068, 0'\n");
    const inventory = await collectInventory({ hostname: "h", fabric: "node-a", simulate: undefined, weightsDirectory: path.join(directory, "weights"), enginePaths: {}, pathEnvironment: bin });
    expect(inventory.gpus).toEqual([
      { index: 0, uuid: "GPU-aaa", name: "NVIDIA L40S", class: "l40s", memory_bytes: 46068 * 1024 ** 2, memory_used_bytes: 10 * 1024 ** 2, memory_foreign_bytes: 0, fabric: "node-a" },
      { index: 1, uuid: "GPU-bbb", name: "NVIDIA L40S", class: "l40s", memory_bytes: 46068 * 1024 ** 2, memory_used_bytes: 0, memory_foreign_bytes: 0, fabric: "node-a" },
    ]);
    expect(inventory.simulated).toBe(false);
    expect(inventory.disk_free_bytes).toBeGreaterThan(0);
  });

  it("counts the memory of processes on a card that carry no engine marker as foreign, and an engine's worker as llmgw's", async () => {
    // An engine worker llmgw started: its environment carries the agent's marker, as every process an engine forks does.
    const engine = spawn("sleep", ["30"], { env: { ...process.env, LLMGW_AGENT_DIR: directory }, stdio: "ignore" });
    try {
      const apps = [`GPU-aaa, ${engine.pid}, 30000`, `GPU-aaa, ${process.pid}, 2048`, `GPU-bbb, ${process.pid}, 1024`].join("\\n");
      await program(
        "nvidia-smi",
        `#!/bin/sh\ncase "$1" in --query-compute-apps*) printf '${apps}\\n';; *) echo '0, GPU-aaa, NVIDIA L40S, 46068, 32100'; echo '1, GPU-bbb, NVIDIA L40S, 46068, 1100';; esac\n`,
      );
      const inventory = await collectInventory({ hostname: "h", fabric: "f", simulate: undefined, weightsDirectory: path.join(directory, "weights"), enginePaths: {}, pathEnvironment: bin });
      expect(inventory.gpus.map((gpu) => gpu.memory_foreign_bytes)).toEqual([2048 * 1024 ** 2, 1024 * 1024 ** 2]);
      expect(inventory.gpus.map((gpu) => gpu.memory_used_bytes)).toEqual([32100 * 1024 ** 2, 1100 * 1024 ** 2]);
    } finally {
      engine.kill();
    }
  });

  it("says nothing of foreign memory when nvidia-smi cannot list the processes", async () => {
    await program("nvidia-smi", `#!/bin/sh\ncase "$1" in --query-compute-apps*) echo 'Field "gpu_uuid" is not a valid field' >&2; exit 2;; *) echo '0, GPU-aaa, NVIDIA L40S, 46068, 10';; esac\n`);
    const inventory = await collectInventory({ hostname: "h", fabric: "f", simulate: undefined, weightsDirectory: path.join(directory, "weights"), enginePaths: {}, pathEnvironment: bin });
    expect(inventory.gpus[0]).not.toHaveProperty("memory_foreign_bytes");
  });

  it("joins as a CPU node when nvidia-smi fails, warning with nvidia-smi named and the fix", async () => {
    await program("nvidia-smi", "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2\nexit 9\n");
    const warnings: string[] = [];
    const inventory = await collectInventory({
      hostname: "h",
      fabric: "f",
      simulate: undefined,
      weightsDirectory: path.join(directory, "weights"),
      enginePaths: {},
      pathEnvironment: bin,
      onWarning: (message) => warnings.push(message),
    });
    expect(inventory.gpus).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${path.join(bin, "nvidia-smi")} failed (NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.)`);
    expect(warnings[0]).toContain("Check the NVIDIA driver");
  });

  it("is a CPU node without nvidia-smi", async () => {
    const inventory = await collectInventory({ hostname: "h", fabric: "f", simulate: undefined, weightsDirectory: path.join(directory, "weights"), enginePaths: {}, pathEnvironment: bin });
    expect(inventory.gpus).toEqual([]);
    expect(inventory.cpu_cores).toBe(os.availableParallelism());
  });

  it("gives pretend cards from --simulate, each group on its own fabric or the node's", async () => {
    const inventory = await collectInventory({
      hostname: "h",
      fabric: "node-a",
      simulate: parseHardwareSpec("2xH100-80GB@nvl0,1xL40S,cpu:32c/256g"),
      weightsDirectory: path.join(directory, "weights"),
      enginePaths: {},
    });
    expect(inventory.gpus.map((gpu) => [gpu.index, gpu.class, gpu.fabric])).toEqual([
      [0, "h100", "nvl0"],
      [1, "h100", "nvl0"],
      [2, "l40s", "node-a"],
    ]);
    expect(inventory).toMatchObject({ cpu_cores: 32, memory_bytes: 256 * 1024 ** 3, simulated: true, engines: ["vllm", "sglang", "trtllm", "llamacpp", "comfyui"] });
  });

  it("gives pretend cards the other processes' memory the spec names, as used and foreign", async () => {
    const inventory = await collectInventory({ hostname: "h", fabric: "f", simulate: parseHardwareSpec("1xL40S-48GB@pcie+foreign=6g,1xL40S-48GB@pcie"), weightsDirectory: path.join(directory, "weights"), enginePaths: {} });
    expect(inventory.gpus.map((gpu) => [gpu.memory_foreign_bytes, gpu.memory_used_bytes])).toEqual([
      [6 * 1024 ** 3, 6 * 1024 ** 3],
      [0, 0],
    ]);
  });
});
