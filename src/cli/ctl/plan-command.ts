import { admin } from "../../client/index.js";
import type { Command } from "commander";
import type { Plan } from "../../plan/index.js";
import { print, printJson } from "../output.js";
import { fraction, tokenCount, wholeNumber } from "../parse-option.js";
import { apiClient, ctlOptions } from "./context.js";

interface PlanOptions {
  gpus?: string;
  context?: number;
  utilization?: number;
  nodes?: number;
  hubEndpoint?: string;
  json?: boolean;
}

/**
 * `ctl model plan`: with --gpus it is a what-if computed right here, needing
 * no server (the source is read from this machine); without it the server
 * plans against its live fleet, reading the source with its own hub settings.
 */
export function registerPlanCommand(model: Command): void {
  model
    .command("plan")
    .argument("<source>", "an HF id (Org/Name[@revision]), a mirror folder URL, a local folder, or a .gguf file")
    .description("does the model fit, and how to split it: every pool × quantisation × cards per replica")
    .option("--gpus <spec>", 'what-if fleet instead of the server\'s, e.g. "2xH100-80GB@nvl0,4xL40S-48GB@pcie" (each group is one node; 2x8xH100-80GB@ib0 is two alike nodes on fabric ib0; cpu:32c/256g adds a CPU host)')
    .option("--context <tokens>", "the context one request must get: 32768, 32k or 1M (default: the largest that fits is reported)", tokenCount)
    .option("--nodes <n>", "plan replicas that span N nodes of one fabric (default: one node, and the fewest nodes where no node holds the model)", wholeNumber(1, 8))
    .option("--utilization <fraction>", "with --gpus: share of each card the engine may use (default 0.90)", fraction)
    .option("--hub-endpoint <url>", "with --gpus: where HF ids are read (env HF_ENDPOINT; default the Hugging Face Hub)")
    .option("--json", "print the plan as JSON (shape in docs/PLAN.md)")
    .action(async (source: string, options: PlanOptions, command: Command) => {
      const json = ctlOptions(command).json;
      // Loaded when run: the planner reads GGUF and hub files, and would slow every other ctl call's start.
      const { defaultHubEndpoint, planSource, renderPlanTable } = await import("../../plan/index.js");
      let plan: Plan;
      if (options.gpus !== undefined) {
        plan = await planSource(source, {
          gpus: options.gpus,
          context: options.context,
          nodes: options.nodes,
          gpuMemoryUtilization: options.utilization,
          hubEndpoint: options.hubEndpoint ?? process.env.HF_ENDPOINT ?? defaultHubEndpoint,
          hubToken: process.env.HF_TOKEN,
          // This plan reads the hub from here, so a failure points at this command's settings, not the server's file.
          hubSettings: { endpoint: "--hub-endpoint or HF_ENDPOINT", token: "HF_TOKEN in this shell" },
        });
      } else {
        const query = new URLSearchParams({ source });
        if (options.context !== undefined) query.set("context", String(options.context));
        if (options.nodes !== undefined) query.set("nodes", String(options.nodes));
        plan = await apiClient(ctlOptions(command)).send(admin.plan<Plan>(Object.fromEntries(query)));
        if (plan.candidates.length === 0 && !json) {
          print(renderPlanTable(plan));
          print('No nodes have joined this server yet. Plan against a what-if fleet with --gpus, e.g. --gpus "2xH100-80GB,cpu:32c/256g".');
          return;
        }
      }
      if (json) return printJson(plan);
      print(renderPlanTable(plan));
    });
}
