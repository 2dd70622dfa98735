import { execFile } from "node:child_process";
import { constants as fsConstants } from "node:fs";
import { access, mkdir, statfs } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { engineNames, type EngineName } from "../catalog/light.js";
import { type HardwareSpec, nvidiaSmiComputeAppsArguments, nvidiaSmiQueryArguments, parseNvidiaSmi, parseNvidiaSmiComputeApps } from "../fleet/for-agent.js";
import { type CardInventory, type Inventory, type LlamaCppInventory, softwareVersion } from "../protocol/for-agent.js";
import { comfyuiPresent, type ComfyuiSetup } from "./prepare-comfyui.js";
import { nodeDefaultBuild, type BuiltinLlamaInstall } from "../engines/index.js";
import { markedAgentDirectory } from "./engine-marker.js";
import { readProcessEnvironment } from "./engine-process.js";

const execFileAsync = promisify(execFile);

/**
 * Where an engine is when not found the usual way: ComfyUI's checkout folder
 * (holding main.py); for the others, the program to run in place of the
 * driver's (a vllm outside PATH, the python3 of SGLang's virtualenv).
 */
export type EnginePaths = Partial<Record<EngineName, string>>;

export interface InventoryOptions {
  readonly hostname: string;
  /** The node's fabric; a simulated card group with its own @fabric keeps that one. */
  readonly fabric: string;
  readonly simulate: HardwareSpec | undefined;
  readonly weightsDirectory: string;
  readonly enginePaths: EnginePaths;
  readonly pathEnvironment?: string | undefined;
  /** Told when nvidia-smi fails; the agent logs it. */
  readonly onWarning?: ((message: string) => void) | undefined;
  /** Reported in place of the cards when nvidia-smi fails: the last ones read, or none at start. */
  readonly lastKnownCards?: readonly CardInventory[] | undefined;
  /** Where ComfyUI is and how to install it; left out, only a configured --engine-path finds it. */
  readonly comfyui?: ComfyuiSetup | undefined;
  /** llmgw's built-in llama.cpp (node-llama-cpp) as installed: it runs llamacpp replicas where llama-server is missing. */
  readonly builtinLlama?: BuiltinLlamaInstall | undefined;
}

/** Looks a program up the way a shell would: an absolute or relative path as is, a bare name on PATH. */
export async function findProgram(program: string, pathEnvironment = process.env.PATH ?? ""): Promise<string | undefined> {
  const candidates = program.includes("/")
    ? [path.resolve(program)]
    : pathEnvironment
        .split(path.delimiter)
        .filter((directory) => directory.length > 0)
        .map((directory) => path.join(directory, program));
  for (const candidate of candidates) {
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // not here; try the next directory
    }
  }
  return undefined;
}

async function fileExists(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * SGLang runs as `python -m sglang.launch_server`, so there is no program to
 * find: ask Python whether the package is importable. find_spec does not
 * import it, because importing sglang pulls in torch and takes seconds.
 */
async function pythonHasModule(module: string): Promise<boolean> {
  const python = (await findProgram("python3")) ?? (await findProgram("python"));
  if (!python) return false;
  try {
    await execFileAsync(python, ["-c", `import importlib.util,sys; sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 1)`], {
      timeout: 10_000,
    });
    return true;
  } catch {
    return false;
  }
}

/** The programs each engine needs: a configured path wins over the lookup. */
export async function detectEngines(enginePaths: EnginePaths, pathEnvironment?: string): Promise<EngineName[]> {
  const found: EngineName[] = [];
  for (const engine of engineNames) {
    const configured = enginePaths[engine];
    let present: boolean;
    if (configured !== undefined) {
      present = await fileExists(engine === "comfyui" ? path.join(configured, "main.py") : configured);
    } else {
      switch (engine) {
        case "vllm":
          present = (await findProgram("vllm", pathEnvironment)) !== undefined;
          break;
        case "sglang":
          present = await pythonHasModule("sglang");
          break;
        case "trtllm":
          present = (await findProgram("trtllm-serve", pathEnvironment)) !== undefined;
          break;
        case "llamacpp":
          present = (await findProgram("llama-server", pathEnvironment)) !== undefined;
          break;
        case "comfyui":
          // ComfyUI is a checkout with main.py, never on PATH: only a configured folder finds it.
          present = false;
          break;
      }
    }
    if (present) found.push(engine);
  }
  return found;
}

async function realCards(options: InventoryOptions): Promise<CardInventory[]> {
  const { fabric, pathEnvironment } = options;
  const nvidiaSmi = await findProgram("nvidia-smi", pathEnvironment);
  if (!nvidiaSmi) return [];
  let stdout: string;
  try {
    // A wedged driver can hang nvidia-smi for minutes; the agent must still join (as a CPU node) and heartbeat.
    ({ stdout } = await execFileAsync(nvidiaSmi, [...nvidiaSmiQueryArguments], { timeout: 15_000 }));
  } catch (error) {
    const failure = error as { killed?: boolean; stderr?: string; message: string };
    const why = failure.killed ? "did not answer within 15 s" : (failure.stderr?.trim().split("\n")[0] ?? "") || failure.message;
    const fallback = options.lastKnownCards ?? [];
    options.onWarning?.(
      `${nvidiaSmi} failed (${why}), so this node reports ${fallback.length === 0 ? "no GPUs (it joins as a CPU node)" : "the cards it read last"}. ` +
        "Check the NVIDIA driver (nvidia-smi must run by itself, e.g. after loading the driver or rebooting), then restart the agent.",
    );
    return [...fallback];
  }
  const foreign = await foreignBytesByCard(nvidiaSmi);
  return parseNvidiaSmi(stdout).map((gpu) => ({
    index: gpu.index,
    uuid: gpu.uuid,
    name: gpu.name,
    class: gpu.cardClass,
    memory_bytes: gpu.memoryBytes,
    ...(gpu.memoryUsedBytes !== undefined ? { memory_used_bytes: gpu.memoryUsedBytes } : {}),
    ...(foreign !== undefined ? { memory_foreign_bytes: Math.min(gpu.memoryBytes, foreign.get(gpu.uuid) ?? 0) } : {}),
    fabric,
  }));
}

/**
 * Memory per card (by uuid) held by processes llmgw did not start: every
 * compute process on the card whose environment carries no engine marker.
 * Engines and the workers they fork inherit the marker, so a vLLM worker
 * counts as llmgw's; a process whose environment cannot be read (another
 * user's) is not one of ours. Undefined when nvidia-smi cannot list the
 * processes: the card then says nothing rather than "none".
 */
async function foreignBytesByCard(nvidiaSmi: string): Promise<Map<string, number> | undefined> {
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(nvidiaSmi, [...nvidiaSmiComputeAppsArguments], { timeout: 15_000 }));
  } catch {
    return undefined;
  }
  const apps = parseNvidiaSmiComputeApps(stdout);
  const ours = await Promise.all(apps.map(async (app) => markedAgentDirectory((await readProcessEnvironment(app.pid)) ?? {}) !== undefined));
  const foreign = new Map<string, number>();
  apps.forEach((app, index) => {
    if (!ours[index]) foreign.set(app.cardUuid, (foreign.get(app.cardUuid) ?? 0) + app.usedBytes);
  });
  return foreign;
}

/** Pretend cards from --simulate, numbered 0.. across the groups as nvidia-smi would number them. */
export function simulatedCards(spec: HardwareSpec, hostname: string, fabric: string): CardInventory[] {
  const gpus: CardInventory[] = [];
  for (const group of spec.groups) {
    for (let card = 0; card < group.count; card += 1) {
      const index = gpus.length;
      gpus.push({
        index,
        uuid: `GPU-simulated-${hostname}-${index}`,
        name: `Simulated ${group.label}`,
        class: group.cardClass,
        memory_bytes: group.memoryBytes,
        // What the pretend card holds before any replica: the other processes it was given (--simulate "...+foreign=20g").
        memory_used_bytes: group.foreignBytes ?? 0,
        memory_foreign_bytes: group.foreignBytes ?? 0,
        fabric: group.fabric ?? fabric,
      });
    }
  }
  return gpus;
}

/** `llama-server --version` prints "version: 4567 (abc1234)" on stderr; the first line that says so. */
async function llamaServerVersion(program: string): Promise<string | null> {
  try {
    const { stdout, stderr } = await execFileAsync(program, ["--version"], { timeout: 10_000 });
    return `${stderr}\n${stdout}`.split("\n").find((line) => /^version:/i.test(line.trim()))?.trim().slice(0, 200) ?? null;
  } catch (error) {
    const failure = error as { stderr?: string };
    return failure.stderr?.split("\n").find((line) => /^version:/i.test(line.trim()))?.trim().slice(0, 200) ?? null;
  }
}

async function llamaCppOnNode(options: InventoryOptions, gpus: readonly CardInventory[]): Promise<LlamaCppInventory | undefined> {
  const server = options.enginePaths.llamacpp ?? (await findProgram("llama-server", options.pathEnvironment));
  if (server !== undefined && (await fileExists(server))) return { kind: "llama-server", path: server, version: await llamaServerVersion(server) };
  const builtin = options.builtinLlama;
  if (builtin === undefined) return undefined;
  return { kind: "built-in", version: builtin.version, builds: [...builtin.builds], build: nodeDefaultBuild(gpus.length, builtin.builds) };
}

export async function collectInventory(options: InventoryOptions): Promise<Inventory> {
  await mkdir(options.weightsDirectory, { recursive: true });
  const disk = await statfs(options.weightsDirectory);
  const simulate = options.simulate;
  const engines = simulate ? [...engineNames] : await detectEngines(options.enginePaths, options.pathEnvironment);
  // With no llama-server, llamacpp replicas run on the built-in engine (a configured --engine-path llamacpp is meant as given).
  if (!simulate && options.builtinLlama !== undefined && options.enginePaths.llamacpp === undefined && !engines.includes("llamacpp")) {
    engines.push("llamacpp");
    engines.sort((left, right) => engineNames.indexOf(left) - engineNames.indexOf(right));
  }
  const installable = options.comfyui?.installCommand !== undefined;
  // A simulated node runs every engine as the simulated one: ComfyUI counts as there unless an install command is given to exercise.
  const present = options.comfyui !== undefined ? (await comfyuiPresent(options.comfyui.folder)) || (simulate !== undefined && !installable) : engines.includes("comfyui");
  // A node that has ComfyUI (installed earlier into DATA_DIR/ComfyUI too) or can install it takes ComfyUI models: placement reads the engines list.
  if ((installable || present) && !engines.includes("comfyui")) engines.push("comfyui");
  const gpus = simulate ? simulatedCards(simulate, options.hostname, options.fabric) : await realCards(options);
  const llamaCpp = simulate ? undefined : await llamaCppOnNode(options, gpus);
  return {
    hostname: options.hostname,
    gpus,
    memory_bytes: simulate?.host?.memoryBytes ?? os.totalmem(),
    cpu_cores: simulate?.host?.cpuCores ?? os.availableParallelism(),
    engines,
    disk_free_bytes: Number(disk.bavail) * Number(disk.bsize),
    simulated: simulate !== undefined,
    comfyui: { present, installable },
    ...(llamaCpp !== undefined ? { llama_cpp: llamaCpp } : {}),
    agent_version: softwareVersion,
  };
}
