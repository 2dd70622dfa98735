import { admin } from "../../client/index.js";
import path from "node:path";
import { InvalidArgumentError, type Command } from "commander";
import { parseDuration, modelClasses, type ModelClass } from "../../catalog/light.js";
import { DomainError } from "../../errors/light.js";
import { formatContext, formatGiB } from "../../plan/light.js";
import type { Plan, PlanCandidate } from "../../plan/index.js";
import { gatewayTryLines } from "../gateway-try-lines.js";
import { print, printJson } from "../output.js";
import { duration, tokenCount } from "../parse-option.js";
import { addModel, describeSourcesChecked } from "./add-model.js";
import { apiClient, ctlOptions } from "./context.js";
import { waitForModel } from "./wait-for-model.js";

interface ServeOptions {
  name?: string;
  context?: number;
  class?: ModelClass;
  onDemand?: boolean;
  wait?: boolean;
  timeout?: string;
}

function modelClass(value: string): ModelClass {
  const found = modelClasses.find((name) => name === value);
  if (!found) throw new InvalidArgumentError(`"${value}" is not a class: one of ${modelClasses.join(", ")}.`);
  return found;
}

/** "vllm bf16 on 1 h100 card (l40s@pcie pool)", as a person reads the choice. */
function describeCandidate(candidate: PlanCandidate): string {
  const where = candidate.gpus === 0 ? `a CPU host (${formatGiB(candidate.pool.card_memory_bytes)})` : `${candidate.gpus} ${candidate.pool.gpu_class} card${candidate.gpus === 1 ? "" : "s"} (${candidate.pool.fabric})`;
  return `${candidate.engine} ${candidate.quantization} on ${where}, context up to ${formatContext(candidate.max_context)}`;
}

/**
 * `ctl model serve SOURCE`: one command from a model's files to an answer.
 * The server plans the source against its live fleet (GET /api/v1/plan), the
 * best fitting candidate becomes a model entry (plan/serve-entry.ts, pure),
 * which is printed as YAML to keep, then added with the source check
 * (POST /api/v1/models) and, with --wait, followed until it serves.
 */
export function registerServeCommand(ctl: Command): void {
  const model = ctl.commands.find((command) => command.name() === "model");
  if (!model) throw new Error("the `ctl model` group is registered before `ctl model serve`");
  model
    .command("serve")
    .argument("<source>", "an HF id (Org/Name[@revision]), mirror:path, a folder or .gguf URL, or a path on the server (./relative to here)")
    .description("plan a model against the live fleet, add it on the best fitting candidate, and wait until it answers")
    .option("--name <name>", "the model's name (default: the repository's or folder's name in lower case)")
    .option("--context <tokens>", "the context one request must get: 32768, 32k or 1M (default: the largest the chosen candidate holds)", tokenCount)
    .option("--class <class>", `${modelClasses.join("|")} (default: standard, opportunistic with --on-demand)`, modelClass)
    .option("--on-demand", "scaling min 0: nothing runs until a request comes, and it stops when idle")
    .option("--wait", "follow it until it answers (the default when the output is a terminal)")
    .option("--no-wait", "add it and return at once")
    .option("--timeout <duration>", "with --wait: give up after this long (default 30m)", duration)
    .option("--json", "print the API's answer (AddedModel) instead of the definition, with progress on stderr; the plan's JSON when nothing fits")
    .action(async (written: string, options: ServeOptions, command: Command) => {
      // A relative path means this shell's folder: the server, and later the agents, would read it against their own.
      const source = /^\.\.?\//.test(written) ? path.resolve(written) : written;
      // A ComfyUI model is a workflow and its files: there is no one checkpoint in its repository to plan.
      // Loaded when run, not at the top: the planner and the YAML writer would slow every other ctl call's start.
      const [{ renderPlanTable, chooseServeEntry }, { stringify }, { comfyPresetForSource, shippedPresets }] = await Promise.all([
        import("../../plan/index.js"),
        import("yaml"),
        import("../../catalog/index.js"),
      ]);
      const comfyPreset = comfyPresetForSource(source, shippedPresets());
      if (comfyPreset) {
        throw new DomainError(
          "comfy_workflow_source",
          `${source} is the ComfyUI preset ${comfyPreset.name}'s model: a workflow and the files it loads, not one checkpoint to plan; nothing was added`,
          `Add it as the preset: \`llmgw ctl model add ${comfyPreset.name}\` (\`llmgw ctl model presets\` says whether it fits).`,
        );
      }
      const json = ctlOptions(command).json === true;
      const client = apiClient(ctlOptions(command));
      const query = new URLSearchParams({ source });
      if (options.context !== undefined) query.set("context", String(options.context));
      const plan = await client.send(admin.plan<Plan>(Object.fromEntries(query)));
      const choice = chooseServeEntry(plan, { source, name: options.name, context: options.context, class: options.class, onDemand: options.onDemand });
      if (!choice.fits) {
        if (json) printJson(plan);
        else print(renderPlanTable(plan));
        throw new DomainError(
          "does_not_fit",
          `${source}: ${choice.why}; nothing was added`,
          "Free or add cards (`llmgw ctl nodes`), ask for less context (--context), or serve a smaller or quantised version of the model.",
        );
      }
      if (!json) {
        print(`Best fit: ${describeCandidate(choice.candidate)}.\nThe model definition (keep it as a file for \`ctl model add -f\`):\n`);
        print(`${stringify(choice.entry)}\n`);
      }
      // No --no-source-check here: the plan has just made the server read the source, so a source it cannot read never gets this far.
      const added = await addModel(client, choice.entry, { sourceCheck: true });
      if (json) printJson(added);
      else print(`${describeSourcesChecked(added)}\n\nAdded ${added.name}.`);
      let ready: string | undefined;
      if (options.wait ?? process.stdout.isTTY === true) {
        ready = await waitForModel(client, added.name, {
          since: new Date(0).toISOString(),
          timeoutMs: parseDuration(options.timeout ?? "30m") ?? 1_800_000,
          // Progress stays off stdout under --json, which holds one JSON document.
          ...(json ? { say: (line: string) => void process.stderr.write(`${line}\n`) } : {}),
          holdReadyLine: !json,
        });
      }
      // Ends as `model add --wait` does: the line saying it serves comes last.
      if (!json) {
        // The curl printed must work as printed: with a key where the gateway checks keys.
        const keyed = await client.gatewayChecksKeys().catch(() => false);
        const curl = gatewayTryLines(client.baseUrl, added.name, keyed).slice(0, keyed ? 3 : 2);
        print(["", "Try it through the gateway:", ...curl, ...(ready ? ["", ready] : [])].join("\n"));
      }
    });
}
