import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Llama, LlamaModel } from "node-llama-cpp";
import type { LlamaBuild } from "./llama-build.js";

/**
 * Loading llama.cpp through node-llama-cpp, which llmgw ships as an optional
 * dependency: an install without optional packages (a control plane only)
 * has none, and nothing here is imported until an engine starts.
 *
 * Only the prebuilt bindings from the npm registry are used (build: never):
 * no compiler runs and nothing is downloaded, at install or at run time.
 */
export type { LlamaBuild } from "./llama-build.js";

/** The npm package of each prebuilt build on this platform, as node-llama-cpp names them. */
function buildPackages(platform: NodeJS.Platform = process.platform, arch: string = process.arch): Record<LlamaBuild, readonly string[]> {
  const system = platform === "darwin" ? "mac" : platform === "win32" ? "win" : platform;
  const base = `@node-llama-cpp/${system}-${arch}`;
  return {
    cpu: [base],
    cuda: [`${base}-cuda`, `${base}-cuda-ext`],
    vulkan: [`${base}-vulkan`],
    metal: [`${base}-metal`],
  };
}

/** The package.json of an installed package, found from its entry point (these packages export no ./package.json). */
function installedPackage(name: string): { version: string } | undefined {
  let folder: string;
  try {
    folder = dirname(fileURLToPath(import.meta.resolve(name)));
  } catch {
    return undefined;
  }
  for (let depth = 0; depth < 4; depth += 1) {
    try {
      const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
      if (manifest.name === name && typeof manifest.version === "string") return { version: manifest.version };
    } catch {
      // not at this level; look one folder up
    }
    folder = dirname(folder);
  }
  return undefined;
}

export interface BuiltinLlamaInstall {
  /** node-llama-cpp's version. */
  readonly version: string;
  /** The prebuilt builds installed beside it. */
  readonly builds: readonly LlamaBuild[];
}

/** node-llama-cpp and its prebuilt builds as installed, or undefined when it is not (an install without optional packages). */
export function builtinLlamaInstall(): BuiltinLlamaInstall | undefined {
  const version = installedPackage("node-llama-cpp")?.version;
  if (version === undefined) return undefined;
  const builds = Object.entries(buildPackages())
    .filter(([, packages]) => packages.some((name) => installedPackage(name) !== undefined))
    .map(([build]) => build as LlamaBuild);
  return builds.length === 0 ? undefined : { version, builds };
}

export interface LoadedLlama {
  readonly llama: Llama;
  readonly build: LlamaBuild;
  /** What the log's start line says: the build, llama.cpp's release and the devices. */
  readonly description: string;
}

/**
 * llama.cpp for this engine: the CUDA build when it was given cards
 * (CUDA_VISIBLE_DEVICES holds them and layers go to the GPU), the CPU build
 * otherwise. A replica placed on cards never falls back to the CPU silently:
 * it would answer, a hundred times slower, while holding the cards.
 */
export async function loadLlama(options: { readonly useCards: boolean; readonly visibleDevices: string | undefined; readonly log: (line: string) => void }): Promise<LoadedLlama> {
  let library: typeof import("node-llama-cpp");
  try {
    library = await import("node-llama-cpp");
  } catch (error) {
    throw new Error(
      `node-llama-cpp is not installed (${error instanceof Error ? error.message.split("\n")[0] : String(error)}); ` +
        "install llmgw with its optional dependencies (npm ci, without --omit=optional) or install llama-server on this node",
    );
  }
  const gpu = options.useCards ? "cuda" : false;
  const llama = await library.getLlama({
    gpu,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    logLevel: library.LlamaLogLevel.warn,
    logger: (level, message) => {
      const text = message.trimEnd();
      if (text !== "") options.log(`llama.cpp ${level}: ${text}`);
    },
  });
  const build: LlamaBuild = llama.gpu === false ? "cpu" : llama.gpu;
  const release = llama.llamaCppRelease.release;
  const devices = build === "cpu" ? `${llama.cpuMathCores} CPU cores` : `CUDA_VISIBLE_DEVICES=${options.visibleDevices ?? ""} (${(await llama.getGpuDeviceNames()).join(", ")})`;
  const version = builtinLlamaInstall()?.version ?? "unknown";
  return { llama, build, description: `${build} build of llama.cpp ${release} (node-llama-cpp ${version}, ${llama.buildType}) on ${devices}` };
}

export type { Llama, LlamaModel };
