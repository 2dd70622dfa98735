import { z } from "zod";
import { requireOneNode } from "./require-cards.js";
import { EngineCannotRun } from "../../errors/engine-errors.js";
import type { EngineDriver, EngineLaunch, EngineLaunchInput, EngineMetrics } from "../driver.js";
import { launchEnvironment } from "./launch-environment.js";

/**
 * The variable that tells the simulated engine which model a ComfyUI replica
 * serves: ComfyUI's command line has no model name. ComfyUI ignores it.
 */
export const comfyuiModelNameVariable = "LLMGW_MODEL_NAME";

// ComfyUI's GET /queue: each entry is one prompt; we only count them.
const queueSchema = z.looseObject({
  queue_running: z.array(z.unknown()).catch([]),
  queue_pending: z.array(z.unknown()).catch([]),
});

/**
 * ComfyUI's `main.py` (https://github.com/comfyanonymous/ComfyUI, comfy/cli_args.py).
 * It is a checkout, not a program on PATH, so it needs the input's enginePath.
 * It uses one card; --cpu when the placement gives none. It has no Prometheus
 * metrics: its JSON /queue gives running and waiting prompts.
 */
export const comfyuiDriver: EngineDriver = {
  engine: "comfyui",
  metricsPath: "/queue",
  program: "python3",
  build(input: EngineLaunchInput): EngineLaunch {
    requireOneNode("comfyui", input);
    if (input.cards.length > 1) {
      throw new EngineCannotRun("comfyui", `it uses one card and the placement gave it ${input.cards.length}`, "Set the profile's `gpus` to 1 (or 0 for CPU).");
    }
    if (input.enginePath === undefined || input.enginePath === "") {
      throw new EngineCannotRun("comfyui", "the node has no ComfyUI folder configured", "Tell the agent where ComfyUI is checked out, so it can run its main.py.");
    }
    const argv = ["python3", `${input.enginePath.replace(/\/+$/, "")}/main.py`, "--listen", input.host ?? "127.0.0.1", "--port", String(input.port)];
    if (input.cards.length === 0) argv.push("--cpu");
    argv.push(...input.extraArgs);
    return {
      argv,
      env: { ...launchEnvironment(input), [comfyuiModelNameVariable]: input.modelName },
      healthPath: "/system_stats",
      metricsPath: "/queue",
    };
  },
  parseMetrics(text: string): EngineMetrics {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const queue = queueSchema.safeParse(body);
    return {
      requestsRunning: queue.success ? queue.data.queue_running.length : undefined,
      requestsWaiting: queue.success ? queue.data.queue_pending.length : undefined,
      kvCacheUsage: undefined,
      promptTokensTotal: undefined,
      generationTokensTotal: undefined,
    };
  },
};
